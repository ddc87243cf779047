"""create_coding_tools: the seven tools, wired together."""

from __future__ import annotations

from pathlib import Path

from jsonschema import Draft202012Validator

from tiller.agent.validation import validate_tool_arguments
from tiller.tools import DEFAULT_TOOLS, create_coding_tools
from tiller.tools.ports import ApprovalRequest

from .helpers import run, text


def test_all_seven_tools_by_name(project: Path):
    tools = create_coding_tools(project)
    assert list(tools) == DEFAULT_TOOLS == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    for name, tool in tools.items():
        assert tool.name == tool.label == name
        assert tool.description
        Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["type"] == "object"


def test_edit_schema_accepts_both_forms(project: Path):
    schema = create_coding_tools(project)["edit"].parameters
    validate_tool_arguments("edit", schema, {"path": "a", "oldText": "x", "newText": "y"})
    validate_tool_arguments("edit", schema, {"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})


def test_model_arguments_are_coerced(project: Path):
    schema = create_coding_tools(project)["read"].parameters
    assert validate_tool_arguments("read", schema, {"path": "a", "offset": "5"}) == {"path": "a", "offset": 5}


async def test_read_may_open_bash_full_output(project: Path):
    tools = create_coding_tools(project)
    result = await run(tools["bash"], command="seq 1 3000")
    log = result.details["fullOutputPath"]
    assert not Path(log).is_relative_to(project)
    assert text(await run(tools["read"], path=log, limit=2)).startswith("1\n2\n\n[2999 more lines")


async def test_hooks_reach_write_and_edit(project: Path):
    proposals: list[ApprovalRequest] = []
    written: dict[Path, str] = {}

    class Writer:
        async def write(self, path: Path, content: str) -> None:
            written[path] = content

    buffers = {project / "open.txt": "buffer text\n"}
    tools = create_coding_tools(
        project, open_document=buffers.get, writer=Writer(), approve=lambda p: proposals.append(p)
    )
    await run(tools["write"], path="new.txt", content="hello")
    await run(tools["edit"], path="open.txt", oldText="buffer", newText="edited")
    assert text(await run(tools["read"], path="open.txt")) == "buffer text\n"
    assert written == {project / "new.txt": "hello", project / "open.txt": "edited text\n"}
    assert [p.display_path for p in proposals] == ["new.txt", "open.txt"]
    assert not (project / "new.txt").exists()
