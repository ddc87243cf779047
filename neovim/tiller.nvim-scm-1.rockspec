-- luarocks package of the Neovim plugin (rocks.nvim, lazy.nvim's rockspec support).
-- Build from this directory: `luarocks make tiller.nvim-scm-1.rockspec`.
rockspec_format = '3.0'
package = 'tiller.nvim'
version = 'scm-1'

source = {
  url = 'git+file://.',
}

description = {
  summary = 'Chat with the tiller coding agent; its edits land in your buffers',
  detailed = [[
    The Neovim client of tiller, an agent server for code editors: a streaming chat, steering,
    approvals with diffs through vim.ui.select, and agent edits applied to open buffers.
    Needs the `tiller` server (Python) on PATH.
  ]],
  labels = { 'neovim', 'plugin', 'ai', 'agent', 'lsp' },
  license = 'MIT',
}

dependencies = {
  'lua >= 5.1',
}

build = {
  type = 'builtin',
  copy_directories = { 'doc', 'plugin', 'syntax' },
}
