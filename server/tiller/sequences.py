"""How many leading items two sequences share: lines around an edit (lsp/text_edits.py),
messages a rewound conversation keeps (host/session.py)."""

from __future__ import annotations

from collections.abc import Sequence


def common_prefix_length(a: Sequence[object], b: Sequence[object]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count
