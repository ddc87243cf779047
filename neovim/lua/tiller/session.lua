-- One chat per workspace root: the server's session behind it, its transcript, its pending
-- approvals and queue, kept in step with `agent/event` (a gap in `seq` is repaired from
-- `agent/getState`).
local client = require('tiller.client')
local config = require('tiller.config')
local events = require('tiller.events')
local transcript = require('tiller.transcript')

local M = {}

-- root -> chat state
local chats = {}
-- Set by init.lua: redraw a chat / show its approvals.
M.on_change = function(_) end
M.on_approval = function(_) end

local function new_chat(root)
  return {
    root = root,
    id = nil, -- the server's sessionId
    seq = 0,
    t = transcript.new(),
    streaming = false,
    pending = {}, -- approvalId -> approval_request event, in arrival order in `order`
    order = {},
    answered = {}, -- approvalId -> true once the user answered (until approval_resolved)
    queue = { steering = {}, followUp = {} },
    model = nil,
    approval_mode = nil,
    recovering = false,
    held = {}, -- events that arrived while recovering
    context_windows = {}, -- model ref -> context window, as far as a model picker showed them
  }
end

function M.get(root)
  chats[root] = chats[root] or new_chat(root)
  return chats[root]
end

function M.all()
  return chats
end

local function changed(chat)
  M.on_change(chat)
end

local function error_message(err)
  return type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
end

function M.note(chat, text, level)
  transcript.note(chat.t, text, level)
  changed(chat)
end

-- Call `callback(lsp)` once the chat's server runs; one that cannot start is a note.
function M.with_server(chat, callback)
  client.with_client(chat.root, function(lsp, message)
    if not lsp then
      M.note(chat, message, 'error')
      return
    end
    callback(lsp)
  end)
end

-- `method` with `params`; `on_result(result)` with its answer, or an error note that starts
-- with `failure` (nil: just the error message).
function M.request(chat, lsp, method, params, failure, on_result, bufnr)
  client.request(lsp, method, params, function(err, result)
    if err then
      M.note(chat, (failure and failure .. ': ' or '') .. error_message(err), 'error')
    elseif on_result then
      on_result(result)
    end
  end, bufnr)
end

M.next_approval = events.next_approval

function M.refresh(chat, on_done)
  client.with_client(chat.root, function(lsp, message)
    if not lsp or not chat.id then
      chat.recovering = false
      if on_done then
        on_done(message)
      end
      return
    end
    client.request(lsp, 'agent/getState', { sessionId = chat.id }, function(err, state)
      chat.recovering = false
      if err then
        M.note(chat, 'Could not reload the session: ' .. error_message(err), 'error')
      else
        events.restore(chat, state)
        -- Events that came while the state was on its way: the newer ones still apply.
        local held = chat.held
        chat.held = {}
        table.sort(held, function(a, b)
          return a.seq < b.seq
        end)
        for _, params in ipairs(held) do
          if params.seq == chat.seq + 1 then
            chat.seq = params.seq
            events.apply(chat, params.event)
          end
        end
      end
      changed(chat)
      M.on_approval(chat)
      if on_done then
        on_done(err and error_message(err) or nil)
      end
    end)
  end)
end

-- One `agent/event` notification.
function M.on_event(root, params)
  local chat = chats[root]
  if not chat or params.sessionId ~= chat.id then
    return
  end
  if chat.recovering then
    table.insert(chat.held, params)
    return
  end
  if params.seq ~= chat.seq + 1 then
    if params.seq <= chat.seq then
      return -- already seen (the state we rebuilt from included it)
    end
    chat.recovering = true
    table.insert(chat.held, params)
    M.refresh(chat)
    return
  end
  chat.seq = params.seq
  events.apply(chat, params.event)
  changed(chat)
  if params.event.type == 'approval_request' or params.event.type == 'approval_resolved' then
    M.on_approval(chat)
  elseif params.event.type == 'rewind' then
    -- The conversation may have gone back: show it as the server now has it.
    chat.recovering = true
    M.refresh(chat)
  end
end

function M.on_exit(root, code, signal)
  local chat = chats[root]
  if not chat then
    return
  end
  chat.streaming = false
  chat.t.streaming_reply = nil
  chat.pending, chat.order = {}, {}
  chat.queue = { steering = {}, followUp = {} }
  chat.restart = chat.id -- resumed (it was saved) on the next prompt
  chat.id = nil
  local why = signal ~= 0 and ('signal ' .. signal) or ('code ' .. code)
  transcript.note(chat.t, string.format('tiller exited (%s). It starts again with your next prompt.', why), 'warn')
  changed(chat)
  M.on_approval(chat)
end

-- --- requests --------------------------------------------------------------------------------

-- The chat now shows the session of `result` (agent/newSession or agent/loadSession).
local function opened(chat, result)
  chat.id = result.sessionId
  chat.model = result.model
  chat.approval_mode = result.approvalMode
  chat.seq = 0
end

-- Call `callback(lsp)` with a session open (created, or resumed after a restart).
function M.with_session(chat, callback)
  M.with_server(chat, function(lsp)
    if chat.id then
      callback(lsp)
      return
    end
    local function create()
      local params = { approvalMode = config.options.approval_mode, model = config.options.model }
      M.request(chat, lsp, 'agent/newSession', params, 'Could not start a session', function(result)
        opened(chat, result)
        changed(chat)
        callback(lsp)
      end)
    end
    local previous = chat.restart
    chat.restart = nil
    if not previous then
      create()
      return
    end
    client.request(lsp, 'agent/loadSession', { sessionId = previous }, function(err, result)
      if err then
        create() -- it never completed a message, so nothing was saved
        return
      end
      -- The chat already shows this conversation (and the note that the server exited).
      opened(chat, result)
      callback(lsp)
    end)
  end)
end

-- Send what the user typed: a prompt, or while a run streams a steering message (or with
-- `opts.follow_up` a follow-up). `opts.context`: editor context items for a prompt.
function M.send(chat, text, opts)
  opts = opts or {}
  M.with_session(chat, function(lsp)
    if chat.streaming then
      local method = opts.follow_up and 'agent/followUp' or 'agent/steer'
      M.request(chat, lsp, method, { sessionId = chat.id, text = text }, nil, function(queue)
        chat.queue = queue
        changed(chat)
      end)
      return
    end
    local params = { sessionId = chat.id, text = text, context = opts.context }
    if opts.follow_up then
      params.streamingBehavior = 'followUp'
    end
    chat.streaming = true -- until agent_end: what the user sends next steers
    changed(chat)
    client.request(lsp, 'agent/prompt', params, function(err)
      if err then
        chat.streaming = false
        M.note(chat, error_message(err), 'error')
      end
    end, opts.bufnr)
  end)
end

function M.abort(chat)
  if not chat.id then
    return
  end
  client.with_client(chat.root, function(lsp)
    if lsp then
      client.request(lsp, 'agent/abort', { sessionId = chat.id }, function() end)
    end
  end)
end

function M.respond(chat, approval_id, option_id, message)
  chat.answered[approval_id] = true
  client.with_client(chat.root, function(lsp)
    if not lsp or not chat.id then
      return
    end
    local params = { sessionId = chat.id, approvalId = approval_id, optionId = option_id, message = message }
    client.request(lsp, 'agent/respondApproval', params, function(err)
      -- Already answered or cancelled (the run was aborted meanwhile): nothing to do.
      if err and err.code ~= -32004 then
        M.note(chat, error_message(err), 'error')
      end
    end)
  end)
end

-- Resume the saved session `session_id` in this chat.
function M.load(chat, session_id, on_done)
  M.with_server(chat, function(lsp)
    M.request(chat, lsp, 'agent/loadSession', { sessionId = session_id }, 'Could not resume the session',
      function(result)
        opened(chat, result)
        M.refresh(chat, on_done)
      end)
  end)
end

-- A settings request for the chat's session (setModel, setApprovalMode).
function M.set(chat, method, params)
  M.with_session(chat, function(lsp)
    params.sessionId = chat.id
    M.request(chat, lsp, method, params, nil, function(settings)
      chat.model = settings.model
      chat.approval_mode = settings.approvalMode
      changed(chat)
    end)
  end)
end

return M
