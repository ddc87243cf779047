-- The user's options, merged over the defaults.
local M = {}

---@class tiller.Config
M.defaults = {
  -- How to start the server: a list (argv) or a string (one executable, `serve` is added).
  cmd = { 'tiller', 'serve' },
  -- Environment for the server process (e.g. { OPENAI_BASE_URL = '...' }); keys stay yours.
  cmd_env = nil,
  -- "provider/modelId" for new sessions; nil lets the server choose.
  model = nil,
  -- "ask" | "acceptEdits" | "yolo" for new sessions.
  approval_mode = 'ask',
  -- Where sessions are saved (nil: the server's default, ~/.local/share/tiller).
  data_dir = nil,
  -- Markers that make a directory a workspace root (one server per root).
  root_markers = { '.git' },
  -- Save a buffer after an agent edit lands in it (false: the edit stays unsaved, like any
  -- LSP code action, and the file on disk keeps the old text until you :write).
  save_edited_buffers = true,
  chat = {
    layout = 'split', -- "split" | "float"
    position = 'right', -- for a split: "right" | "left" | "bottom" | "top"
    size = 0.4, -- width (or height) of a split: columns, or a fraction of the editor
    float = { width = 0.7, height = 0.8, border = 'rounded' },
    input_height = 5,
  },
  -- Keys in the chat and prompt buffers (false disables one).
  keys = {
    send = { n = '<CR>', i = '<C-s>' }, -- prompt, or steer while a run streams
    follow_up = { n = '<M-CR>', i = '<M-CR>' }, -- queue a follow-up while a run streams
    abort = '<C-c>',
    approve = 'a', -- in the chat: answer the pending approval
    close = 'q',
  },
  -- How long to wait, in milliseconds, for the server to start.
  start_timeout = 10000,
}

M.options = vim.deepcopy(M.defaults)

function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  if type(M.options.cmd) == 'string' then
    M.options.cmd = { M.options.cmd, 'serve' }
  end
  return M.options
end

return M
