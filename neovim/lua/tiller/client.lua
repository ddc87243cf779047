-- The `tiller serve` processes: one LSP client per workspace root, started with Neovim's
-- own LSP client, every file buffer attached so the server sees unsaved text.
local config = require('tiller.config')

local M = {}

M.PROTOCOL_VERSION = 1
M.NAME = 'tiller'

-- Neovim 0.10: `vim.lsp.start_client` and client functions called with `.`; from 0.11 on
-- `vim.lsp.start({ attach = false })` and methods called with `:`. (A field, so the tests
-- can run the 0.10 path in 0.11, which still accepts it.)
M.legacy = vim.fn.has('nvim-0.11') == 0

-- root -> { id = client id, ready = bool, waiting = { callbacks }, info = serverInfo }
local servers = {}
-- Set by init.lua: where events, edits and exits go.
M.on_event = function(_, _) end
M.on_exit = function(_, _, _) end

-- The workspace root of a buffer: the nearest directory with a root marker, else the cwd.
function M.root_for(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root
  if vim.bo[bufnr].buftype == '' and vim.api.nvim_buf_get_name(bufnr) ~= '' then
    root = vim.fs.root(bufnr, config.options.root_markers)
  end
  return vim.fs.normalize(root or vim.fn.getcwd())
end

function M.request(client, method, params, handler, bufnr)
  if M.legacy then
    return client.request(method, params, handler, bufnr)
  end
  return client:request(method, params, handler, bufnr)
end

local function stop(client)
  if M.legacy then
    client.stop()
  else
    client:stop()
  end
end

local function is_file_buffer(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  return name ~= '' and not name:match('^%a[%w+.-]*://')
end

-- Attach `bufnr` to every running tiller client (the server sees its unsaved text).
function M.attach(bufnr)
  if not is_file_buffer(bufnr) then
    return
  end
  for _, server in pairs(servers) do
    if server.ready and vim.lsp.get_client_by_id(server.id) then
      vim.lsp.buf_attach_client(bufnr, server.id)
    end
  end
end

local function attach_all(id)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if is_file_buffer(bufnr) then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
end

function M.capabilities()
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  -- The plugin answers approval_request events, and saves (or, if the user said so, keeps
  -- unsaved) the buffers agent edits land in: the server never writes behind a buffer.
  capabilities.experimental = { tiller = { approvals = true, savesEditedDocuments = true } }
  return capabilities
end

local function init_options()
  local o = config.options
  return { defaultModel = o.model, approvalMode = o.approval_mode, dataDir = o.data_dir }
end

local function fail_waiting(server, message)
  local waiting = server.waiting
  server.waiting = {}
  for _, callback in ipairs(waiting) do
    callback(nil, message)
  end
end

local function start(root)
  local server = { ready = false, waiting = {} }
  servers[root] = server
  local lsp_config = {
    name = M.NAME,
    cmd = config.options.cmd,
    cmd_env = config.options.cmd_env,
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    capabilities = M.capabilities(),
    init_options = init_options(),
    -- Agent edits wait for the synced text: send changes soon after they happen.
    flags = { debounce_text_changes = 50 },
    handlers = {
      ['agent/event'] = function(_, params)
        M.on_event(root, params)
      end,
      ['workspace/applyEdit'] = require('tiller.edits').handler,
    },
    on_init = function(client, result)
      local tiller = vim.tbl_get(result or {}, 'capabilities', 'experimental', 'tiller') or {}
      if tiller.protocolVersion ~= M.PROTOCOL_VERSION then
        local message = string.format('tiller speaks protocol version %s; this plugin knows version %d',
          tostring(tiller.protocolVersion), M.PROTOCOL_VERSION)
        vim.schedule(function()
          fail_waiting(server, message)
          stop(client)
        end)
        return
      end
      server.info = result.serverInfo
      vim.schedule(function()
        server.ready = true
        attach_all(client.id)
        local waiting = server.waiting
        server.waiting = {}
        for _, callback in ipairs(waiting) do
          callback(client)
        end
      end)
    end,
    on_exit = function(code, signal)
      vim.schedule(function()
        if servers[root] == server then
          servers[root] = nil
        end
        fail_waiting(server, string.format('tiller exited (code %d) before it was ready', code))
        if server.ready then
          M.on_exit(root, code, signal)
        end
      end)
    end,
  }
  local ok, id
  if M.legacy then
    ok, id = pcall(vim.lsp.start_client, lsp_config)
  else
    ok, id = pcall(vim.lsp.start, lsp_config, { attach = false, reuse_client = function()
      return false
    end })
  end
  if not ok or not id then
    servers[root] = nil
    return nil, 'could not start ' .. table.concat(config.options.cmd, ' ') .. ': ' .. tostring(id)
  end
  server.id = id
  return server
end

-- Call `callback(client)` once the server of `root` runs (starting it if needed), or
-- `callback(nil, message)` if it cannot start.
function M.with_client(root, callback)
  local server = servers[root]
  if server and server.id and not vim.lsp.get_client_by_id(server.id) then
    server = nil -- gone
  end
  if not server then
    local message
    server, message = start(root)
    if not server then
      callback(nil, message)
      return
    end
  end
  if server.ready then
    callback(vim.lsp.get_client_by_id(server.id))
  else
    table.insert(server.waiting, callback)
  end
end

function M.server(root)
  return servers[root]
end

function M.stop_all()
  for _, server in pairs(servers) do
    local client = server.id and vim.lsp.get_client_by_id(server.id)
    if client then
      stop(client)
    end
  end
end

return M
