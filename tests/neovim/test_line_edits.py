"""The server's line edits applied by Neovim's own `apply_text_edits` (what its applyEdit
handler does) to buffers read from files: the buffer ends up holding the new text, however
Neovim keeps the final newline ('eol') and clamps edits at the end of the buffer."""

from __future__ import annotations

import random

import pytest
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from tests.server.test_text_edits import as_json, random_text
from tiller.lsp.editor import same_text
from tiller.lsp.text_edits import line_edits


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_neovim_applies_the_line_edits_exactly(start_neovim, tmp_path, encoding):
    nvim = start_neovim()
    units = PositionCodec(types.PositionEncodingKind(encoding)).client_num_units
    rng = random.Random(11)
    path = tmp_path / "buffer.txt"
    for case in range(400):
        old, new = random_text(rng), random_text(rng)
        if rng.random() < 0.5:
            old += "\n"
        if rng.random() < 0.5:
            new += "\n"
        path.write_text(old)
        # As the server sees the buffer (Neovim reads an empty file as one line with 'eol').
        synced = nvim.lua("vim.cmd('silent edit! ' .. vim.fn.fnameescape(...)); return vim.lsp._buf_get_full_text(0)",
                          str(path))
        edits = as_json(line_edits(synced, new, units))
        result = nvim.lua("""
            local edits, encoding = ...
            vim.lsp.util.apply_text_edits(edits, vim.api.nvim_get_current_buf(), encoding)
            return vim.lsp._buf_get_full_text(0)
        """, edits, encoding)
        # Exactly the new text; only a final newline the edit takes away stays ('eol').
        expected = [new] if new.endswith("\n") else [new, new + "\n"]
        assert result in expected and same_text(result, new), (case, old, new, edits, result)
