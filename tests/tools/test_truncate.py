"""pi's truncation rules (truncate.ts)."""

from __future__ import annotations

from tiller.tools.truncate import (
    format_size,
    tail_bytes,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_format_size():
    assert format_size(0) == "0B"
    assert format_size(1023) == "1023B"
    assert format_size(1024) == "1.0KB"
    assert format_size(51200) == "50.0KB"
    assert format_size(1536) == "1.5KB"
    assert format_size(1024 * 1024) == "1.0MB"
    assert format_size(5 * 1024 * 1024 + 512 * 1024) == "5.5MB"


def test_head_within_limits_is_untouched():
    result = truncate_head("a\nb\nc")
    assert (result.content, result.truncated, result.truncated_by) == ("a\nb\nc", False, None)
    assert (result.total_lines, result.output_lines, result.total_bytes) == (3, 3, 5)


def test_head_by_lines():
    result = truncate_head("\n".join(str(i) for i in range(10)), max_lines=4)
    assert result.content == "0\n1\n2\n3"
    assert (result.truncated_by, result.output_lines, result.total_lines) == ("lines", 4, 10)


def test_head_by_bytes_keeps_whole_lines():
    result = truncate_head("aaaa\nbbbb\ncccc", max_bytes=10)
    assert result.content == "aaaa\nbbbb"
    assert (result.truncated_by, result.output_bytes) == ("bytes", 9)


def test_head_first_line_too_long():
    result = truncate_head("x" * 20 + "\nshort", max_bytes=10)
    assert result.first_line_exceeds_limit and result.content == "" and result.output_lines == 0


def test_head_counts_utf8_bytes():
    result = truncate_head("ééé\nééé", max_bytes=8)  # each line is 6 bytes
    assert result.content == "ééé" and result.truncated_by == "bytes"


def test_tail_by_lines():
    result = truncate_tail("\n".join(str(i) for i in range(10)), max_lines=3)
    assert result.content == "7\n8\n9"
    assert (result.truncated_by, result.output_lines, result.last_line_partial) == ("lines", 3, False)


def test_tail_by_bytes():
    result = truncate_tail("aaaa\nbbbb\ncccc", max_bytes=10)
    assert result.content == "bbbb\ncccc" and result.truncated_by == "bytes"


def test_tail_partial_last_line():
    result = truncate_tail("start\n" + "x" * 30, max_bytes=10)
    assert result.content == "x" * 10
    assert result.last_line_partial and result.output_lines == 1 and result.output_bytes == 10


def test_tail_bytes_never_cuts_a_character():
    assert tail_bytes("aé", 2) == "é"
    assert tail_bytes("aé", 1) == ""  # half of é would be garbage


def test_truncate_line():
    assert truncate_line("short") == ("short", False)
    long, cut = truncate_line("y" * 501)
    assert cut and long == "y" * 500 + "... [truncated]"


def test_details_are_camel_case_without_content():
    details = truncate_head("a\nb\nc", max_lines=2).as_details()
    assert details["truncatedBy"] == "lines" and details["totalLines"] == 3 and details["outputLines"] == 2
    assert "content" not in details
