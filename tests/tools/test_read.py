"""read: pi's tools.test.ts cases, images by magic bytes, editor buffers."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tiller.ai.abort import AbortSignal
from tiller.ai.types import ImageContent
from tiller.tools import ReadTool, Workspace
from tiller.tools.read import STREAM_ABOVE, page_text, read_file

from .helpers import fails, run, text

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 20
IMAGES = {
    "image/png": PNG,
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 10,
    "image/gif": b"GIF89a\x01\x00\x01\x00" + b"\x00" * 10,
    "image/webp": b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 10,
}


@pytest.fixture
def tool(ws: Workspace) -> ReadTool:
    return ReadTool(ws)


def numbered(count: int) -> str:
    return "\n".join(f"line {i}" for i in range(1, count + 1))


async def test_reads_a_small_file_whole(tool, project: Path):
    (project / "a.txt").write_text("hello\nworld\n")
    result = await run(tool, path="a.txt")
    assert text(result) == "hello\nworld\n"
    assert result.details is None


async def test_missing_file_reports_the_filesystem_error(tool):
    message = await fails(tool, path="nope.txt")
    assert "No such file or directory" in message and "nope.txt" in message


async def test_truncates_at_2000_lines(tool, project: Path):
    (project / "long.txt").write_text(numbered(2500))
    result = await run(tool, path="long.txt")
    output = text(result)
    assert "line 2000" in output and "line 2001" not in output
    assert output.endswith("\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")
    truncation = result.details["truncation"]
    assert truncation["truncatedBy"] == "lines" and truncation["totalLines"] == 2500
    assert truncation["outputLines"] == 2000


async def test_truncates_at_50kb(tool, project: Path):
    (project / "wide.txt").write_text("\n".join("x" * 200 for _ in range(500)))
    result = await run(tool, path="wide.txt")
    # 254 lines of 200 bytes plus 253 newlines fit in 51200 bytes, a 255th does not.
    assert text(result).endswith("\n\n[Showing lines 1-254 of 500 (50.0KB limit). Use offset=255 to continue.]")
    assert result.details["truncation"]["truncatedBy"] == "bytes"


async def test_offset(tool, project: Path):
    (project / "f.txt").write_text(numbered(100))
    output = text(await run(tool, path="f.txt", offset=51))
    assert output.startswith("line 51\n") and output.endswith("line 100")
    assert "line 50\n" not in output and "[" not in output


async def test_limit(tool, project: Path):
    (project / "f.txt").write_text(numbered(100))
    output = text(await run(tool, path="f.txt", limit=10))
    assert output == numbered(10) + "\n\n[90 more lines in file. Use offset=11 to continue.]"


async def test_offset_and_limit(tool, project: Path):
    (project / "f.txt").write_text(numbered(100))
    output = text(await run(tool, path="f.txt", offset=41, limit=20))
    assert output.startswith("line 41\n") and "line 60\n\n" in output and "line 61" not in output
    assert output.endswith("[40 more lines in file. Use offset=61 to continue.]")


async def test_limit_reaching_the_end_has_no_notice(tool, project: Path):
    (project / "f.txt").write_text(numbered(5))
    assert text(await run(tool, path="f.txt", offset=3, limit=10)) == "line 3\nline 4\nline 5"


async def test_offset_beyond_end(tool, project: Path):
    (project / "f.txt").write_text("a\nb\nc")
    assert await fails(tool, path="f.txt", offset=100) == "Offset 100 is beyond end of file (3 lines total)"


async def test_offset_truncated_by_lines_continues_from_there(tool, project: Path):
    (project / "f.txt").write_text(numbered(5000))
    output = text(await run(tool, path="f.txt", offset=1001))
    assert output.endswith("[Showing lines 1001-3000 of 5000. Use offset=3001 to continue.]")


async def test_first_line_over_the_byte_limit(tool, project: Path):
    (project / "big.txt").write_text("z" * 60000 + "\nnext")
    result = await run(tool, path="big.txt")
    assert text(result) == "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' big.txt | head -c 51200]"
    assert result.details["truncation"]["firstLineExceedsLimit"] is True


@pytest.mark.parametrize("mime", sorted(IMAGES))
async def test_images_are_recognised_by_magic_bytes(tool, project: Path, mime: str):
    data = IMAGES[mime]
    (project / "picture.dat").write_bytes(data)  # the extension says nothing
    result = await run(tool, path="picture.dat")
    assert text(result) == f"Read image file [{mime}]"
    image = result.content[1]
    assert isinstance(image, ImageContent) and image.mime_type == mime
    assert base64.b64decode(image.data) == data


async def test_fake_image_is_read_as_text(tool, project: Path):
    (project / "fake.png").write_text("definitely not a png")
    result = await run(tool, path="fake.png")
    assert text(result) == "definitely not a png" and len(result.content) == 1


async def test_open_editor_buffer_wins_over_disk(ws: Workspace, project: Path):
    (project / "a.py").write_text("on disk\n")
    seen: list[Path] = []

    def open_document(path: Path) -> str | None:
        seen.append(path)
        return {project / "a.py": "unsaved edit\n", project / "new.py": "never saved\n"}.get(path)

    tool = ReadTool(ws, open_document=open_document)
    assert text(await run(tool, path="a.py")) == "unsaved edit\n"
    assert text(await run(tool, path="new.py")) == "never saved\n"  # open in the editor only
    (project / "b.py").write_text("disk only\n")
    assert text(await run(tool, path="b.py")) == "disk only\n"
    assert seen == [project / "a.py", project / "new.py", project / "b.py"]


async def test_at_prefix_and_absolute_paths(tool, project: Path):
    (project / "a.txt").write_text("x")
    assert text(await run(tool, path="@a.txt")) == "x"
    assert text(await run(tool, path=str(project / "a.txt"))) == "x"


async def test_invalid_utf8_is_replaced_not_fatal(tool, project: Path):
    (project / "latin1.txt").write_bytes(b"caf\xe9\n")
    assert text(await run(tool, path="latin1.txt")) == "caf\ufffd\n"


async def test_abort_before_start(tool, project: Path):
    (project / "a.txt").write_text("x")
    cancel = AbortSignal()
    cancel.abort()
    assert await fails(tool, cancel, path="a.txt") == "Operation aborted"


async def test_result_serialises_for_the_wire(tool, project: Path):
    (project / "long.txt").write_text(numbered(2500))
    wire = (await run(tool, path="long.txt")).dump()
    assert wire["details"]["truncation"]["truncatedBy"] == "lines"
    (project / "p.png").write_bytes(PNG)
    wire = (await run(tool, path="p.png")).dump()
    assert wire["content"][1] == {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}


@pytest.mark.parametrize(("offset", "limit"), [
    (None, None), (1, 10), (5000, None), (150_000, 20), (None, 3000), (199_990, None), (200_001, None), (7, 0),
])
def test_a_large_file_is_streamed_with_the_same_pages_as_a_small_one(tmp_path: Path, offset, limit):
    """Above STREAM_ABOVE the file is never read whole; what the model sees is identical."""
    lines = [("x" * (n % 97)) + f" line {n}" for n in range(1, 200_001)]
    lines[150_005] = "y" * 60_000  # a line over the byte limit inside a page
    data = "\n".join(lines).encode()
    assert len(data) > STREAM_ABOVE
    path = tmp_path / "big.txt"
    path.write_bytes(data)
    try:
        expected = text(page_text(data.decode(), "big.txt", offset, limit))
    except ValueError as error:
        with pytest.raises(ValueError) as raised:
            read_file(path, "big.txt", offset, limit, lambda: False)
        assert str(raised.value) == str(error)
        return
    assert text(read_file(path, "big.txt", offset, limit, lambda: False)) == expected
