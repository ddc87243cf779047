"""The plugin's Lua, checked as the suite checks the Python: every file compiles, and none
reads or writes a global it does not mean (a typo'd local becomes a global in Lua)."""

from __future__ import annotations

from .driver import PLUGIN

GLOBALS_USED = """
local files, allowed = ...
local bc = require('jit.bc')
local problems = {}
for _, file in ipairs(files) do
  local chunk, err = loadfile(file)
  if not chunk then
    table.insert(problems, err)
  else
    local out = {}
    bc.dump(chunk, { write = function(_, s) table.insert(out, s) end, flush = function() end }, true)
    for name in table.concat(out):gmatch('G[GS]ET.-; "([^"]+)"') do
      if not vim.tbl_contains(allowed, name) then
        table.insert(problems, file .. ': global ' .. name)
      end
    end
  end
end
return problems
"""

ALLOWED = ["vim", "require", "pairs", "ipairs", "type", "tostring", "tonumber", "table", "string", "math", "os",
           "pcall", "select", "unpack", "next", "error", "assert", "getmetatable"]


def test_the_lua_compiles_and_uses_no_stray_globals(start_neovim):
    files = sorted(str(path) for path in PLUGIN.rglob("*.lua") if "scripts" not in path.parts)
    assert len(files) >= 10
    assert start_neovim().lua(GLOBALS_USED, files, ALLOWED) == []
