-- How `agent/event`s (and `agent/getState`) change a chat: its transcript, whether a run
-- streams, its queue and settings, and its pending approvals.
local transcript = require('tiller.transcript')
local render = require('tiller.render')

local M = {}

-- --- approvals -----------------------------------------------------------------------------

local function add_approval(chat, request)
  if not chat.pending[request.approvalId] then
    table.insert(chat.order, request.approvalId)
  end
  chat.pending[request.approvalId] = request
  local tool = chat.t.tools[request.toolCallId]
  if tool then
    tool.approval = request.title
    transcript.touch(chat.t, tool)
  end
end

local function drop_approval(chat, approval_id)
  local request = chat.pending[approval_id]
  chat.pending[approval_id] = nil
  chat.answered[approval_id] = nil
  chat.order = vim.tbl_filter(function(id)
    return id ~= approval_id
  end, chat.order)
  local tool = request and chat.t.tools[request.toolCallId]
  if tool then
    tool.approval = nil
    transcript.touch(chat.t, tool)
  end
end

-- The first pending approval the user has not answered yet.
function M.next_approval(chat)
  for _, id in ipairs(chat.order) do
    if not chat.answered[id] then
      return chat.pending[id]
    end
  end
  return nil
end

-- --- events ----------------------------------------------------------------------------------

local function usage_line(chat, messages)
  local total = { input = 0, output = 0, cost = { total = 0 } }
  local last
  for _, message in ipairs(messages or {}) do
    if message.role == 'assistant' and message.usage then
      total.input = total.input + (message.usage.input or 0)
      total.output = total.output + (message.usage.output or 0)
      total.cost.total = total.cost.total + (message.usage.cost and message.usage.cost.total or 0)
      last = message
    end
  end
  if not last then
    return nil
  end
  local u = last.usage
  local context = (u.totalTokens or 0) > 0 and u.totalTokens
    or (u.input or 0) + (u.output or 0) + (u.cacheRead or 0) + (u.cacheWrite or 0)
  return render.usage(total, context, chat.context_windows[chat.model])
end

local handlers = {}

function handlers.agent_start(chat)
  chat.streaming = true
end

function handlers.message_start(chat, event)
  local message = event.message
  if message.role == 'user' then
    transcript.user(chat.t, message)
  elseif message.role == 'assistant' then
    local partial = vim.deepcopy(message)
    partial.content = partial.content or {}
    chat.t.streaming_reply = transcript.reply(chat.t, partial)
  end
end

function handlers.message_update(chat, event)
  transcript.apply_delta(chat.t, event.assistantMessageEvent)
end

function handlers.message_end(chat, event)
  local message = event.message
  if message.role ~= 'assistant' then
    return
  end
  local item = chat.t.streaming_reply
  if item then
    item.message = message
    transcript.touch(chat.t, item)
  else
    transcript.reply(chat.t, message)
  end
  chat.t.streaming_reply = nil
  transcript.reply_ended(chat.t, message)
end

function handlers.tool_execution_start(chat, event)
  transcript.tool(chat.t, event.toolCallId, event.toolName, event.args)
end

function handlers.tool_execution_end(chat, event)
  transcript.finish_tool(chat.t, event.toolCallId, event.toolName, event.result, event.isError)
end

function handlers.agent_end(chat, event)
  chat.streaming = false
  chat.t.streaming_reply = nil
  local line = usage_line(chat, event.messages)
  if line then
    transcript.note(chat.t, line)
  end
end

function handlers.queue_update(chat, event)
  chat.queue = { steering = event.steering or {}, followUp = event.followUp or {} }
end

function handlers.session_state(chat, event)
  chat.model = event.model
  chat.approval_mode = event.approvalMode
end

function handlers.approval_request(chat, event)
  add_approval(chat, event)
end

function handlers.approval_resolved(chat, event)
  drop_approval(chat, event.approvalId)
end

function handlers.persistence_error(chat, event)
  transcript.note(chat.t, 'Session not saved: ' .. event.message, 'warn')
end

-- Apply one `agent/event` to the chat.
function M.apply(chat, event)
  local handler = handlers[event.type]
  if handler then
    handler(chat, event)
  end
end

-- Rebuild the chat from `agent/getState`.
function M.restore(chat, state)
  chat.t = transcript.from_messages(state.messages, state.isStreaming and state.streamMessage or nil)
  chat.streaming = state.isStreaming
  chat.seq = state.seq
  chat.model = state.model
  chat.approval_mode = state.approvalMode
  chat.queue = state.queue or { steering = {}, followUp = {} }
  chat.pending, chat.order = {}, {}
  for _, request in ipairs(state.pendingApprovals or {}) do
    add_approval(chat, request)
  end
  if state.error and not state.isStreaming then
    transcript.note(chat.t, 'Error: ' .. state.error, 'error')
  end
end

return M
