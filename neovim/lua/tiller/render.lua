-- Transcript items as markdown lines for the chat buffer. Each item renders to a list of
-- lines and the ranges to fold (thinking), relative to its first line.
local M = {}

local function split(text)
  return vim.split(text or '', '\n', { plain = true })
end

local function one_line(text, max)
  text = (text or ''):gsub('%s+', ' '):gsub('^ ', '')
  if #text > max then
    text = vim.fn.strcharpart(text, 0, max - 1) .. '…'
  end
  return text
end

local function text_of(content)
  local parts = {}
  for _, block in ipairs(content or {}) do
    if block.type == 'text' then
      table.insert(parts, block.text)
    end
  end
  return table.concat(parts, '\n')
end

M.text_of = text_of

-- What a tool call is about, in a few words.
local function tool_subject(name, args)
  args = args or {}
  if name == 'bash' then
    return args.command and ('`' .. one_line(args.command, 60) .. '`') or ''
  end
  if name == 'grep' or name == 'find' then
    local where = args.path and (' in ' .. args.path) or ''
    return args.pattern and ('`' .. one_line(args.pattern, 40) .. '`' .. where) or where
  end
  return args.path or ''
end

-- The result of a tool call, in one short line.
local function tool_summary(item)
  if item.status == 'running' then
    return item.approval and ('waiting for approval (' .. item.approval .. ')') or 'running…'
  end
  local text = text_of(item.result and item.result.content)
  local lines = vim.tbl_filter(function(line)
    return line:match('%S') ~= nil
  end, split(text))
  if item.status == 'error' then
    return 'failed: ' .. one_line(lines[1] or 'error', 80)
  end
  if item.name == 'read' then
    return #split(text) .. ' lines'
  end
  local summary = one_line(lines[1] or 'done', 70)
  if #lines > 1 then
    summary = summary .. string.format(' (+%d lines)', #lines - 1)
  end
  return summary
end

local ICONS = { running = '⋯', done = '✓', error = '✗' }

local function user_lines(item)
  local lines = { '## You' }
  local first = true
  for _, block in ipairs(item.content or {}) do
    if block.type == 'text' then
      local attached = block.text:match('^Attached from the editor: ([^\n]*)')
      if attached and not first then
        local name, where = attached:match('^(.*) (%b())$')
        if name then
          attached = vim.fn.fnamemodify(name, ':~:.') .. ' ' .. where
        end
        table.insert(lines, '↳ attached: ' .. attached)
      else
        vim.list_extend(lines, split(block.text))
      end
      first = false
    elseif block.type == 'image' then
      table.insert(lines, '↳ image (' .. (block.mimeType or '?') .. ')')
    end
  end
  return lines, {}
end

local function reply_lines(item, previous)
  -- One heading per reply: the turns after a tool call continue it.
  local continues = previous and (previous.kind == 'reply' or previous.kind == 'tool')
  local lines, folds = continues and {} or { '## tiller' }, {}
  for _, block in ipairs(item.message.content or {}) do
    if block.type == 'text' and block.text ~= '' then
      vim.list_extend(lines, split(block.text))
    elseif block.type == 'thinking' and (block.thinking or '') ~= '' then
      local first = #lines + 1
      table.insert(lines, '∴ Thinking')
      for _, line in ipairs(split(block.thinking)) do
        table.insert(lines, '  ' .. line)
      end
      table.insert(folds, { first, #lines })
    end
  end
  return lines, folds
end

-- The lines of `item` (which follows `previous`) and its folds.
function M.item(item, previous)
  if item.kind == 'user' then
    return user_lines(item)
  elseif item.kind == 'reply' then
    return reply_lines(item, previous)
  elseif item.kind == 'tool' then
    local line = string.format('%s %s %s → %s', ICONS[item.status] or '•', item.name, tool_subject(item.name, item.args),
      tool_summary(item))
    return { (line:gsub('  +', ' ')) }, {}
  elseif item.kind == 'note' then
    local prefix = ({ error = '**Error** ', warn = '⚠ ' })[item.level] or ''
    local lines = split(item.text)
    lines[1] = prefix .. lines[1]:gsub('^Error: ', '')
    return lines, {}
  end
  return {}, {}
end

-- The usage line at the end of a run.
function M.usage(usage, context_tokens, context_window)
  local parts = { string.format('↑%d ↓%d', usage.input or 0, usage.output or 0) }
  local cost = usage.cost and usage.cost.total or 0
  if cost > 0 then
    table.insert(parts, string.format('$%.4f', cost))
  end
  if context_tokens then
    local window = context_window and string.format(' / %d', context_window) or ''
    table.insert(parts, string.format('context %d%s', context_tokens, window))
  end
  return '─ ' .. table.concat(parts, ' · ')
end

return M
