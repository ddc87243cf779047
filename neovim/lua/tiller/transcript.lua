-- A session's conversation as the chat shows it: a list of items (a user prompt, an
-- assistant reply, a tool call, a note), built from `agent/event`s or from saved messages.
-- Items are plain tables; `dirty_from` is the index of the first item whose rendering is out
-- of date, so the chat redraws only from there (a streaming reply is the last item).
local M = {}

function M.new()
  return { items = {}, tools = {}, dirty_from = 1, streaming_reply = nil }
end

local function touch(t, item)
  local index = item.index
  if t.dirty_from == nil or index < t.dirty_from then
    t.dirty_from = index
  end
end

local function add(t, item)
  table.insert(t.items, item)
  item.index = #t.items
  touch(t, item)
  return item
end

M.touch = touch

function M.note(t, text, level)
  return add(t, { kind = 'note', text = text, level = level or 'info' })
end

function M.user(t, message)
  return add(t, { kind = 'user', content = message.content })
end

-- The assistant message `message` (partial or final) as an item.
function M.reply(t, message)
  return add(t, { kind = 'reply', message = message })
end

function M.tool(t, id, name, args)
  local item = t.tools[id]
  if item then
    return item
  end
  item = add(t, { kind = 'tool', id = id, name = name, args = args or {}, status = 'running' })
  t.tools[id] = item
  return item
end

function M.finish_tool(t, id, name, result, is_error)
  local item = M.tool(t, id, name)
  item.status = is_error and 'error' or 'done'
  item.result = result
  touch(t, item)
end

-- A streamed delta of the reply being written (protocol.md, 3.1).
function M.apply_delta(t, delta)
  local item = t.streaming_reply
  if not item then
    return
  end
  local content = item.message.content
  local i = (delta.contentIndex or 0) + 1
  -- text_* and thinking_* keep their text under the block's type: { type = 'text', text = ... }
  local field, phase = delta.type:match('^(%a+)_(%a+)$')
  if field == 'text' or field == 'thinking' then
    if phase == 'start' or not content[i] then
      content[i] = { type = field, [field] = '' }
    end
    if phase == 'delta' then
      content[i][field] = content[i][field] .. delta.delta
    elseif phase == 'end' then
      content[i][field] = delta.content
    end
  elseif delta.type == 'toolcall_start' then
    content[i] = { type = 'toolCall', id = delta.id, name = delta.toolName, arguments = {} }
  elseif delta.type == 'toolcall_end' then
    content[i] = delta.toolCall
  end
  -- Lua arrays must not have holes for ipairs; blocks arrive in order, but be safe.
  for j = 1, i do
    content[j] = content[j] or { type = 'text', text = '' }
  end
  touch(t, item)
end

local function result_of(message)
  return { content = message.content, details = message.details }
end

-- Rebuild from saved messages (agent/getState, a resumed session).
function M.from_messages(messages, stream_message)
  local t = M.new()
  for _, message in ipairs(messages or {}) do
    if message.role == 'user' then
      M.user(t, message)
    elseif message.role == 'assistant' then
      M.reply(t, message)
      for _, block in ipairs(message.content or {}) do
        if block.type == 'toolCall' then
          M.tool(t, block.id, block.name, block.arguments)
        end
      end
      M.reply_ended(t, message)
    elseif message.role == 'toolResult' then
      M.finish_tool(t, message.toolCallId, message.toolName, result_of(message), message.isError)
    end
  end
  if stream_message then
    t.streaming_reply = M.reply(t, vim.deepcopy(stream_message))
  end
  return t
end

-- The end of an assistant message: an error or abort is shown under it.
function M.reply_ended(t, message)
  if message.stopReason == 'error' then
    M.note(t, 'Error: ' .. (message.errorMessage or 'the model failed'), 'error')
  elseif message.stopReason == 'aborted' then
    M.note(t, 'Aborted.', 'warn')
  end
end

return M
