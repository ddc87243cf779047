"""Partial tool arguments read as pi-ai's parseStreamingJson reads them (the `partial-json`
package); each expected value was checked against pi-ai 0.58.3 (tests/parity runs both)."""

from __future__ import annotations

import pytest

from tiller.ai.partial_json import parse_streaming_json


@pytest.mark.parametrize(("text", "expected"), [
    ("", {}),
    ("   ", {}),
    ('{"path": "a.py"}', {"path": "a.py"}),
    ('{"va', {}),
    ('{"value"', {}),
    ('{"value": ', {}),
    ('{"value": "also fi', {"value": "also fi"}),
    # The text is trimmed first: a string being written loses its trailing blanks for now.
    ('{"value": "also ', {"value": "also"}),
    ('{"value": "a\\n  ', {"value": "a\n"}),
    ('{"value": "b\u00a0', {"value": "b"}),
    # Literals cut short already count, outside strings only.
    ('{"v": tr', {"v": True}),
    ('{"v": nu', {"v": None}),
    ('{"v": [1, f', {"v": [1, False]}),
    ('{"v": "a, t', {"v": "a, t"}),
    ('{"v": "a\\", t', {"v": 'a", t'}),
    ('{"v": "x\\\\", "w": t', {"v": "x\\", "w": True}),
    # Escapes and numbers cut short are dropped.
    ('{"v": "a\\', {"v": "a"}),
    ('{"v": "a\\u00', {"v": "a"}),
    ('{"v": 12', {"v": 12}),
    ('{"v": 1.', {}),
    ('{"v": [1, 2', {"v": [1, 2]}),
    ('{"v": {"x": 1', {"v": {"x": 1}}),
    ('{"v": "x", ', {"v": "x"}),
    ("not json", {}),
])
def test_partial_arguments_read_as_pi_reads_them(text, expected):
    assert parse_streaming_json(text) == expected
