-- tiller for Neovim: chat with a coding agent that edits your buffers.
--
--   require('tiller').setup({ model = 'openai/gpt-4.1-mini' })
--
-- Every command has a Lua function here, for mappings (see :help tiller).
local config = require('tiller.config')
local client = require('tiller.client')
local session = require('tiller.session')
local chat_ui = require('tiller.chat')
local approval = require('tiller.approval')
local controls = require('tiller.controls')

local M = {}

local set_up = false

local function current_chat()
  return session.get(client.root_for())
end

-- The chat of the workspace the user is in; the prompt buffer or chat buffer names its own.
local function chat_here()
  local root = vim.b.tiller_root
  if root then
    return session.get(root)
  end
  return current_chat()
end

function M.setup(opts)
  config.setup(opts)
  if set_up then
    return
  end
  set_up = true
  client.on_event = session.on_event
  client.on_exit = session.on_exit
  session.on_change = chat_ui.update
  session.on_approval = approval.changed
  chat_ui.actions = {
    send = function(chat)
      M.send_prompt_buffer(chat, false)
    end,
    follow_up = function(chat)
      M.send_prompt_buffer(chat, true)
    end,
    abort = function(chat)
      session.abort(chat)
    end,
    close = function(chat)
      chat_ui.close(chat)
    end,
    approve = function(chat)
      approval.ask(chat)
    end,
  }
  local group = vim.api.nvim_create_augroup('tiller', { clear = true })
  -- Every file buffer is synced to the server, so the agent sees unsaved text.
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, {
    group = group,
    callback = function(args)
      client.attach(args.buf)
    end,
  })
  -- The markdown parser that ships with Neovim highlights the chat.
  pcall(vim.treesitter.language.register, 'markdown', 'tiller')
end

local function ensure_setup()
  if not set_up then
    M.setup({})
  end
end

function M.send_prompt_buffer(chat, follow_up)
  local text = chat_ui.take_prompt(chat)
  if text ~= '' then
    session.send(chat, text, { follow_up = follow_up })
  end
end

-- :Tiller
function M.toggle()
  ensure_setup()
  local chat = chat_here()
  if chat_ui.is_open(chat) then
    chat_ui.close(chat)
  else
    M.open()
  end
end

function M.open()
  ensure_setup()
  local chat = chat_here()
  chat_ui.open(chat)
  approval.ask(chat)
end

-- The selection of a command's range {line1, line2} in `bufnr` (with the '< '> marks when
-- it was charwise), as byte columns: { row, col, row, col }, 0-based, end exclusive.
local function selection(bufnr, line1, line2)
  local start_mark = vim.api.nvim_buf_get_mark(bufnr, '<')
  local end_mark = vim.api.nvim_buf_get_mark(bufnr, '>')
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ''
  if vim.fn.visualmode() == 'v' and start_mark[1] == line1 and end_mark[1] == line2 then
    -- The end mark is on the last selected character: the range ends after all its bytes.
    local char = vim.fn.strpart(last, end_mark[2], 1, true)
    return { line1 - 1, start_mark[2], line2 - 1, math.min(#last, end_mark[2] + math.max(#char, 1)) }
  end
  return { line1 - 1, 0, line2 - 1, #last }
end

-- A selection as an `agent/prompt` context item, in the client's position encoding.
local function selection_context(bufnr, range, lsp)
  local encoding = lsp.offset_encoding or 'utf-16'
  local function position(row, col)
    return { line = row, character = vim.lsp.util.character_offset(bufnr, row, col, encoding) }
  end
  return {
    uri = vim.uri_from_bufnr(bufnr),
    range = { start = position(range[1], range[2]), ['end'] = position(range[3], range[4]) },
  }
end

-- :TillerPrompt {text}; with `opts.range` ({line1, line2}) the selection goes along.
function M.prompt(text, opts)
  ensure_setup()
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local chat = session.get(client.root_for(bufnr))
  -- Read the selection before opening windows (that forgets the last visual mode).
  local range = opts.range and selection(bufnr, opts.range[1], opts.range[2])
  if not chat_ui.is_open(chat) and opts.open ~= false then
    chat_ui.open(chat)
  end
  if not range then
    session.send(chat, text)
    return
  end
  session.with_server(chat, function(lsp)
    client.attach(bufnr)
    session.send(chat, text, { context = { selection_context(bufnr, range, lsp) }, bufnr = bufnr })
  end)
end

-- :TillerSteer {text}: redirect the running agent (when idle, it is simply the next prompt).
function M.steer(text)
  ensure_setup()
  session.send(chat_here(), text)
end

function M.follow_up(text)
  ensure_setup()
  session.send(chat_here(), text, { follow_up = true })
end

function M.abort()
  ensure_setup()
  session.abort(chat_here())
end

function M.approve()
  ensure_setup()
  approval.ask(chat_here())
end

local pick = controls.pick

local function age(ms)
  local seconds = os.time() - math.floor((ms or 0) / 1000)
  if seconds < 3600 then
    return math.max(1, math.floor(seconds / 60)) .. ' min ago'
  elseif seconds < 86400 then
    return math.floor(seconds / 3600) .. ' h ago'
  end
  return os.date('%Y-%m-%d', math.floor((ms or 0) / 1000))
end

-- :TillerSessions: pick a saved session of this workspace and resume it.
function M.sessions()
  ensure_setup()
  local chat = chat_here()
  session.with_server(chat, function(lsp)
    client.request(lsp, 'agent/listSessions', { cwd = chat.root }, function(err, result)
      if err or not result or #result.sessions == 0 then
        vim.notify(err and err.message or 'tiller: no saved sessions in ' .. chat.root, vim.log.levels.INFO)
        return
      end
      pick(result.sessions, 'Resume a tiller session', 'session', function(s)
        return string.format('%s  (%d messages, %s, %s)', s.title ~= '' and s.title or s.sessionId, s.messageCount,
          s.model, age(s.updatedAt))
      end, function(choice)
        session.load(chat, choice.sessionId, function()
          chat_ui.open(chat)
        end)
      end)
    end)
  end)
end

-- :TillerModel [model or search]: set "provider/id", or pick among the ready models (that
-- match the words given).
function M.model(ref)
  ensure_setup()
  local chat = chat_here()
  local function use(model)
    config.options.model = model
    session.set(chat, 'agent/setModel', { model = model })
  end
  if ref and ref:find('/', 1, true) then
    use(ref)
    return
  end
  local params = { limit = 500 }
  if ref and ref ~= '' then
    params.query = ref
  end
  session.with_server(chat, function(lsp)
    session.request(chat, lsp, 'agent/listModels', params, nil, function(result)
      for _, m in ipairs(result.models) do
        chat.context_windows[m.provider .. '/' .. m.id] = m.contextWindow
      end
      if #result.models == 0 then
        vim.notify('tiller: no ready model matches' .. (params.query and (' "' .. params.query .. '"') or ''),
          vim.log.levels.WARN)
        return
      end
      pick(result.models, 'tiller model', 'model', function(m)
        local name = m.provider .. '/' .. m.id
        return name .. (m.name ~= m.id and ('  ' .. m.name) or '') .. (name == result.default and '  (default)' or '')
      end, function(choice)
        use(choice.provider .. '/' .. choice.id)
      end)
    end)
  end)
end

M.APPROVAL_MODES = { 'ask', 'acceptEdits', 'yolo' }

-- :TillerApprovalMode {ask|acceptEdits|yolo}
function M.approval_mode(mode)
  ensure_setup()
  if not vim.tbl_contains(M.APPROVAL_MODES, mode) then
    vim.notify('tiller: approval mode must be one of ' .. table.concat(M.APPROVAL_MODES, ', '), vim.log.levels.ERROR)
    return
  end
  config.options.approval_mode = mode
  session.set(chat_here(), 'agent/setApprovalMode', { mode = mode })
end

-- :TillerRules: the saved command rules; the one picked is removed.
function M.rules()
  ensure_setup()
  controls.rules(chat_here())
end

-- :TillerRewind: put files and/or the conversation back as they were before a prompt.
function M.rewind()
  ensure_setup()
  controls.rewind(chat_here())
end

-- :TillerTools: the tools the agent may call and the MCP servers' state.
function M.tools()
  ensure_setup()
  controls.tools(chat_here())
end

-- The chat of the current workspace (for statuslines and tests).
function M.chat()
  return chat_here()
end

return M
