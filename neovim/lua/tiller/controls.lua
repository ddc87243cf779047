-- Commands that look at or change what the server keeps for a session: its command rules
-- (:TillerRules), its checkpoints (:TillerRewind) and its tools (:TillerTools).
local client = require('tiller.client')
local session = require('tiller.session')

local M = {}

-- Ask the user to pick one of `items` with their picker (vim.ui.select).
function M.pick(items, prompt, kind, format_item, on_choice)
  vim.ui.select(items, { prompt = prompt, kind = 'tiller.' .. kind, format_item = format_item }, function(choice)
    if choice then
      on_choice(choice)
    end
  end)
end

-- `method` for the chat's session (one is started when there is none yet).
local function request(chat, method, params, failure, on_result)
  session.with_session(chat, function(lsp)
    params.sessionId = chat.id
    session.request(chat, lsp, method, params, failure, on_result)
  end)
end

-- --- command rules ---------------------------------------------------------------------------

M.RULE_LISTS = { 'allow', 'ask', 'deny', 'readOnly' }

-- Every saved rule of `result` (agent/getRules) as { scope, list, pattern, rules }, where
-- `rules` is the whole rule set of that scope (what agent/setRules replaces).
local function saved_rules(result)
  local scopes = {
    { 'session', result.session },
    { 'project', result.project and result.project.rules },
    { 'user', result.user and result.user.rules },
  }
  local found = {}
  for _, scope in ipairs(scopes) do
    local rules = scope[2] or {}
    for _, list in ipairs(M.RULE_LISTS) do
      for _, pattern in ipairs(rules[list] or {}) do
        table.insert(found, { scope = scope[1], list = list, pattern = pattern, rules = rules })
      end
    end
  end
  return found
end

local function without(rule)
  local rules = {}
  for _, list in ipairs(M.RULE_LISTS) do
    rules[list] = vim.tbl_filter(function(pattern)
      return not (list == rule.list and pattern == rule.pattern)
    end, rule.rules[list] or {})
  end
  return rules
end

-- :TillerRules: list the saved command rules; the one picked is removed.
function M.rules(chat)
  request(chat, 'agent/getRules', {}, 'Could not read the rules', function(result)
    local rules = saved_rules(result)
    for _, file in ipairs({ result.project, result.user }) do
      if file and file.error then
        vim.notify('tiller: ' .. file.path .. ': ' .. file.error, vim.log.levels.WARN)
      end
    end
    if #rules == 0 then
      vim.notify('tiller: no saved command rules', vim.log.levels.INFO)
      return
    end
    M.pick(rules, 'Remove a tiller command rule', 'rule', function(rule)
      return string.format('%-7s  %-8s  %s', rule.scope, rule.list, rule.pattern)
    end, function(rule)
      local params = { scope = rule.scope, rules = without(rule) }
      request(chat, 'agent/setRules', params, 'Could not remove the rule', function()
        vim.notify(string.format('tiller: removed %s rule "%s" (%s)', rule.list, rule.pattern, rule.scope))
      end)
    end)
  end)
end

-- --- rewind ----------------------------------------------------------------------------------

M.RESTORE = {
  { restore = 'both', label = 'files and conversation' },
  { restore = 'files', label = 'files only' },
  { restore = 'conversation', label = 'conversation only' },
}

local function rewound(result)
  local parts = { string.format('tiller: rewound (%d messages)', result.messageCount) }
  if #result.restored > 0 then
    table.insert(parts, 'restored ' .. table.concat(result.restored, ', '))
  end
  if #result.deleted > 0 then
    table.insert(parts, 'deleted ' .. table.concat(result.deleted, ', '))
  end
  for _, skipped in ipairs(result.skipped) do
    table.insert(parts, 'skipped ' .. skipped.path .. ' (' .. skipped.reason .. ')')
  end
  return table.concat(parts, '; ')
end

-- The server refuses (-32007) a restore that would lose changes made after the agent's last
-- turn: the user decides whether it goes on (what was there stays in the undo checkpoint).
local LOSES_CHANGES = -32007

local function rewind_to(chat, params)
  session.with_session(chat, function(lsp)
    params.sessionId = chat.id
    client.request(lsp, 'agent/rewind', params, function(err, done)
      if err and err.code == LOSES_CHANGES and not params.force then
        M.pick({ 'Restore anyway', 'Keep my changes' }, err.message, 'rewind_force', nil, function(answer)
          if answer == 'Restore anyway' then
            params.force = true
            rewind_to(chat, params)
          end
        end)
      elseif err then
        session.note(chat, 'Could not rewind: ' .. (err.message or vim.inspect(err)), 'error')
      else
        vim.notify(rewound(done))
      end
    end)
  end)
end

-- :TillerRewind: pick a prompt of the conversation and what to put back as it was before it.
-- The chat reloads on the `rewind` event (session.on_event).
function M.rewind(chat)
  request(chat, 'agent/listCheckpoints', {}, 'Could not list the checkpoints', function(result)
    if not result.available then
      vim.notify('tiller: no checkpoints: ' .. (result.reason or 'not available'), vim.log.levels.WARN)
      return
    end
    local turns = vim.tbl_filter(function(c)
      return c.kind == 'turn' and c.onCurrentBranch
    end, result.checkpoints)
    if #turns == 0 then
      vim.notify('tiller: no checkpoint to rewind to yet', vim.log.levels.INFO)
      return
    end
    M.pick(turns, 'Rewind to before', 'checkpoint', function(c)
      return string.format('%s  (message %d)', c.title ~= '' and c.title or c.checkpointId, c.messageCount + 1)
    end, function(checkpoint)
      M.pick(M.RESTORE, 'Restore', 'restore', function(r)
        return r.label
      end, function(choice)
        rewind_to(chat, { checkpointId = checkpoint.checkpointId, restore = choice.restore })
      end)
    end)
  end)
end

-- --- tools -----------------------------------------------------------------------------------

-- One tool as a list item: its name and the first line of its description.
local function tool_line(tool)
  local first = vim.split(tool.description or '', '\n')[1]
  return string.format('- %s%s: %s', tool.name, tool.readOnly and ' (read-only)' or '', first)
end

local function tool_lines(result)
  local lines = { '# Built-in tools', '' }
  for _, tool in ipairs(result.tools) do
    if not tool.server then
      table.insert(lines, tool_line(tool))
    end
  end
  for _, server in ipairs(result.mcpServers) do
    vim.list_extend(lines, { '', string.format('# MCP server %s (%s, %s): %s', server.name, server.source,
      server.transport, server.state) })
    if server.message then
      table.insert(lines, server.message)
    end
    table.insert(lines, '')
    for _, tool in ipairs(server.tools) do
      table.insert(lines, tool_line(tool))
    end
  end
  return lines
end

-- A read-only float showing `lines`; q or <Esc> closes it.
local function show(lines, title)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'markdown'
  local width = math.min(vim.o.columns - 4, 100)
  local height = math.min(vim.o.lines - 4, #lines)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor', width = width, height = height, style = 'minimal', border = 'rounded',
    row = math.floor((vim.o.lines - height) / 2), col = math.floor((vim.o.columns - width) / 2), title = title,
  })
  vim.wo[win].wrap = true
  for _, key in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', key, '<cmd>close<cr>', { buffer = buf, nowait = true })
  end
  return buf
end

-- :TillerTools: the tools the model may call now, and each MCP server's state.
function M.tools(chat)
  request(chat, 'agent/listTools', {}, 'Could not list the tools', function(result)
    show(tool_lines(result), ' tiller tools ')
  end)
end

return M
