-- `workspace/applyEdit`: agent edits land in the user's buffers through Neovim's own
-- handler (so `u` undoes them), each in an undo block of its own, then the touched buffers
-- are saved if the user wants that.
-- The server checks the synced text afterwards, so a skipped edit is never reported done.
local config = require('tiller.config')

local M = {}

local function touched_uris(edit)
  local uris = {}
  for uri in pairs(edit.changes or {}) do
    uris[uri] = true
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      uris[change.textDocument.uri] = true
    end
  end
  return vim.tbl_keys(uris)
end

local function save(bufnr)
  if not (vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].modified and vim.bo[bufnr].buftype == '') then
    return
  end
  vim.api.nvim_buf_call(bufnr, function()
    -- noautocmd: a format-on-save hook must not change the text the server just checked.
    vim.cmd('silent noautocmd lockmarks keepalt write')
  end)
end

-- Changes made without a key pressed between them share one undo block: parallel agent
-- edits, or one right after the user's own change through the API, would be undone together.
-- Setting 'undolevels' (even to its value) closes the block (:help undo-break).
local function close_undo_blocks(uris)
  for _, uri in ipairs(uris) do
    local bufnr = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(bufnr) then
      vim.api.nvim_buf_call(bufnr, function()
        vim.go.undolevels = vim.go.undolevels
      end)
    end
  end
end

function M.handler(err, params, ctx, handler_config)
  local default = vim.lsp.handlers['workspace/applyEdit']
  local uris = params and params.edit and touched_uris(params.edit) or {}
  close_undo_blocks(uris)
  local response = default(err, params, ctx, handler_config)
  close_undo_blocks(uris)
  if response and response.applied and config.options.save_edited_buffers then
    for _, uri in ipairs(uris) do
      local ok, message = pcall(save, vim.uri_to_bufnr(uri))
      if not ok then
        vim.notify('tiller: could not save ' .. vim.uri_to_fname(uri) .. ': ' .. tostring(message), vim.log.levels.WARN)
      end
    end
  end
  return response
end

return M
