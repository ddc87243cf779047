-- The chat window: a markdown buffer (filetype `tiller`) the transcript streams into, and
-- a prompt buffer below it. Only the items that changed are redrawn (a streaming reply is
-- the last item), at most once per event-loop pass.
local config = require('tiller.config')
local render = require('tiller.render')

local M = {}

-- root -> { chat = buffer, prompt = buffer, view = { starts, line_count, folds } }
local views = {}

local function view_of(chat)
  local view = views[chat.root]
  if not view then
    view = { starts = {}, line_count = 0, folds = {}, drawn = {} }
    views[chat.root] = view
  end
  return view
end

local function scratch(name, root, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  -- Short names read better in a statusline; the full root only when two roots share one.
  if not pcall(vim.api.nvim_buf_set_name, buf, name .. vim.fs.basename(root)) then
    vim.api.nvim_buf_set_name(buf, name .. root)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  return buf
end

local function valid(buf)
  return buf and vim.api.nvim_buf_is_valid(buf)
end

-- The chat's buffer `key` ('chat' or 'prompt'), created on first use.
local function buffer(chat, key, filetype, prepare)
  local view = view_of(chat)
  if not valid(view[key]) then
    local buf = scratch('tiller://' .. key .. '/', chat.root, filetype)
    view[key] = buf
    vim.b[buf].tiller_root = chat.root
    prepare(buf, view)
    M.keymaps(chat, buf)
  end
  return view[key]
end

function M.chat_buffer(chat)
  return buffer(chat, 'chat', 'tiller', function(buf, view)
    vim.bo[buf].modifiable = false
    -- Neovim ships the markdown parser; without it the markdown syntax file still works.
    pcall(vim.treesitter.start, buf, 'markdown')
    view.starts, view.line_count, view.folds, view.drawn = {}, 0, {}, {}
    chat.t.dirty_from = 1
  end)
end

function M.prompt_buffer(chat)
  return buffer(chat, 'prompt', 'tiller_prompt', function() end)
end

-- --- drawing -------------------------------------------------------------------------------

local function separated(previous, item)
  return previous and not (item.kind == 'tool' and previous.kind ~= 'user')
end

local function draw(chat)
  local t = chat.t
  local from = t.dirty_from
  if not from then
    return
  end
  t.dirty_from = nil
  local buf = M.chat_buffer(chat)
  local view = view_of(chat)
  local first = view.starts[from] or view.line_count
  local lines, folds = {}, {}
  for i = from, #t.items do
    local item = t.items[i]
    view.starts[i] = first + #lines
    if separated(t.items[i - 1], item) then
      table.insert(lines, '')
    end
    local item_lines, item_folds = render.item(item, t.items[i - 1])
    for _, fold in ipairs(item_folds) do
      table.insert(folds, { first + #lines + fold[1], first + #lines + fold[2] })
    end
    vim.list_extend(lines, item_lines)
  end
  for i = #t.items + 1, #view.starts do
    view.starts[i] = nil
  end
  view.folds = vim.tbl_filter(function(fold)
    return fold[2] <= first
  end, view.folds)
  vim.list_extend(view.folds, folds)
  -- Follow the end in windows whose cursor was on the last line.
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local row = vim.api.nvim_win_get_cursor(win)[1]
    following[win] = row >= view.line_count or win ~= vim.api.nvim_get_current_win()
  end
  -- Only the lines that differ go into the buffer: a streaming reply changes its last lines,
  -- and rewriting the whole reply on every delta would make Neovim redo folds and parsing.
  local same = 0
  while same < #lines and view.drawn[first + same + 1] == lines[same + 1] do
    same = same + 1
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first + same, -1, false, vim.list_slice(lines, same + 1))
  vim.bo[buf].modifiable = false
  for i = #view.drawn, first + same + 1, -1 do
    view.drawn[i] = nil
  end
  for i = same + 1, #lines do
    view.drawn[first + i] = lines[i]
  end
  -- Lines drawn (an empty buffer still has one empty line, which the first item replaces).
  view.line_count = first + #lines
  for win, follow in pairs(following) do
    if follow then
      vim.api.nvim_win_set_cursor(win, { math.max(1, view.line_count), 0 })
    end
  end
end

-- The fold level of `lnum` in a chat buffer: thinking blocks are folds.
function M.foldexpr(lnum)
  local view = views[vim.b.tiller_root or '']
  for _, fold in ipairs(view and view.folds or {}) do
    if lnum == fold[1] then
      return '>1'
    elseif lnum == fold[2] then
      return '<1'
    elseif lnum > fold[1] and lnum < fold[2] then
      return '1'
    end
  end
  return '0'
end

-- A closed thinking block shows its first line and its size.
function M.foldtext()
  return vim.fn.getline(vim.v.foldstart) .. string.format(' (%d lines)', vim.v.foldend - vim.v.foldstart)
end

local function status(chat)
  local parts = { 'tiller' }
  if chat.model then
    table.insert(parts, chat.model)
  end
  if chat.approval_mode then
    table.insert(parts, chat.approval_mode)
  end
  if chat.streaming then
    table.insert(parts, '● working')
  end
  local queued = #chat.queue.steering + #chat.queue.followUp
  if queued > 0 then
    table.insert(parts, string.format('queued: %d', queued))
  end
  if #chat.order > 0 then
    table.insert(parts, string.format('approval pending (%s)', config.options.keys.approve or ':TillerApprove'))
  end
  return (table.concat(parts, ' · '):gsub('%%', '%%%%'))
end

-- Redraws are at most this often (ms): a fast stream brings thousands of deltas a second,
-- and each redraw makes Neovim re-highlight the changed lines.
local MIN_INTERVAL = 50
local scheduled, last_draw = {}, {}

local function redraw(chat)
  scheduled[chat.root] = nil
  last_draw[chat.root] = vim.uv.now()
  draw(chat)
  local view = view_of(chat)
  for _, win in ipairs(vim.fn.win_findbuf(view.chat or -1)) do
    vim.wo[win].winbar = status(chat)
  end
end

-- Redraw `chat` soon (once, however many events arrive before then).
function M.update(chat)
  if scheduled[chat.root] then
    return
  end
  scheduled[chat.root] = true
  local wait = MIN_INTERVAL - (vim.uv.now() - (last_draw[chat.root] or 0))
  if wait > 0 then
    vim.defer_fn(function()
      redraw(chat)
    end, wait)
  else
    vim.schedule(function()
      redraw(chat)
    end)
  end
end

-- Draw now (tests and commands that read the buffer right away).
function M.flush(chat)
  draw(chat)
end

-- --- windows -------------------------------------------------------------------------------

local function size(value, total)
  return value < 1 and math.floor(total * value) or value
end

function M.windows(chat)
  local view = view_of(chat)
  return vim.fn.win_findbuf(view.chat or -1), vim.fn.win_findbuf(view.prompt or -1)
end

function M.is_open(chat)
  local chats = M.windows(chat)
  return #chats > 0
end

local function key_hint()
  local keys = config.options.keys
  local function first(spec)
    return type(spec) == 'table' and (spec.n or spec.i) or spec
  end
  local hints = {}
  for _, hint in ipairs({ { keys.send, 'send/steer' }, { keys.follow_up, 'follow-up' }, { keys.abort, 'abort' } }) do
    if first(hint[1]) then
      table.insert(hints, first(hint[1]) .. ' ' .. hint[2])
    end
  end
  return 'prompt · ' .. table.concat(hints, ' · ')
end

local function setup_prompt_window(win)
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = 'no'
  vim.wo[win].winfixheight = true
  vim.wo[win].winbar = (key_hint():gsub('%%', '%%%%'))
end

local function setup_chat_window(win)
  vim.wo[win].winfixwidth = true
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = 'no'
  vim.wo[win].foldmethod = 'expr'
  vim.wo[win].foldexpr = "v:lua.require'tiller.chat'.foldexpr(v:lnum)"
  vim.wo[win].foldtext = "v:lua.require'tiller.chat'.foldtext()"
  vim.wo[win].foldlevel = 0
  vim.wo[win].foldenable = true
  vim.wo[win].conceallevel = 2
end

local function open_split(chat_buf, prompt_buf)
  local o = config.options.chat
  local vertical = o.position == 'right' or o.position == 'left'
  local total = vertical and vim.o.columns or vim.o.lines
  local where = (o.position == 'right' or o.position == 'bottom') and 'botright' or 'topleft'
  vim.cmd(string.format('%s %s%dsplit', where, vertical and 'vertical ' or '', size(o.size, total)))
  local chat_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(chat_win, chat_buf)
  vim.cmd(string.format('belowright %dsplit', o.input_height))
  local prompt_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(prompt_win, prompt_buf)
  return chat_win, prompt_win
end

local function open_float(chat_buf, prompt_buf)
  local o = config.options.chat.float
  local width = size(o.width, vim.o.columns)
  local height = size(o.height, vim.o.lines) - config.options.chat.input_height - 2
  local col = math.floor((vim.o.columns - width) / 2)
  local row = math.floor((vim.o.lines - height - config.options.chat.input_height - 2) / 2)
  local chat_win = vim.api.nvim_open_win(chat_buf, false, {
    relative = 'editor', width = width, height = height, row = row, col = col, border = o.border,
    title = ' tiller ', style = 'minimal',
  })
  local prompt_win = vim.api.nvim_open_win(prompt_buf, true, {
    relative = 'editor', width = width, height = config.options.chat.input_height, row = row + height + 2,
    col = col, border = o.border, title = ' prompt ', style = 'minimal',
  })
  return chat_win, prompt_win
end

function M.open(chat)
  if M.is_open(chat) then
    local _, prompts = M.windows(chat)
    if prompts[1] then
      vim.api.nvim_set_current_win(prompts[1])
    end
    return
  end
  local chat_buf, prompt_buf = M.chat_buffer(chat), M.prompt_buffer(chat)
  local open = config.options.chat.layout == 'float' and open_float or open_split
  local chat_win, prompt_win = open(chat_buf, prompt_buf)
  setup_chat_window(chat_win)
  setup_prompt_window(prompt_win)
  chat.t.dirty_from = chat.t.dirty_from or 1
  if chat.t.dirty_from == 1 then
    local view = view_of(chat)
    view.starts, view.line_count, view.folds, view.drawn = {}, 0, {}, {}
  end
  M.flush(chat)
  vim.wo[chat_win].winbar = status(chat)
  vim.api.nvim_win_set_cursor(chat_win, { math.max(1, vim.api.nvim_buf_line_count(chat_buf)), 0 })
end

-- The prompt keeps its height when other windows come and go (an approval's diff).
function M.restore_layout(chat)
  local _, prompts = M.windows(chat)
  for _, win in ipairs(prompts) do
    if vim.api.nvim_win_get_config(win).relative == '' then
      vim.api.nvim_win_set_height(win, config.options.chat.input_height)
    end
  end
end

function M.close(chat)
  local chats, prompts = M.windows(chat)
  for _, win in ipairs(vim.list_extend(chats, prompts)) do
    if vim.api.nvim_win_is_valid(win) and #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    end
  end
end

-- The prompt buffer's text, cleared.
function M.take_prompt(chat)
  local buf = M.prompt_buffer(chat)
  local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  return text
end

-- Filled in by init.lua (the actions behind the keys).
M.actions = {}

function M.keymaps(chat, buf)
  local keys = config.options.keys
  local function map(modes, lhs, action, desc)
    if lhs then
      vim.keymap.set(modes, lhs, function()
        M.actions[action](chat)
      end, { buffer = buf, desc = desc, nowait = true })
    end
  end
  local function map_keys(spec, action, desc)
    if type(spec) == 'string' then
      map('n', spec, action, desc)
    elseif type(spec) == 'table' then
      for mode, lhs in pairs(spec) do
        map(mode, lhs, action, desc)
      end
    end
  end
  local is_prompt = vim.bo[buf].filetype == 'tiller_prompt'
  if is_prompt then
    map_keys(keys.send, 'send', 'tiller: send (steers while a run streams)')
    map_keys(keys.follow_up, 'follow_up', 'tiller: queue as a follow-up')
  end
  map_keys(keys.abort, 'abort', 'tiller: abort the run')
  map_keys(keys.close, 'close', 'tiller: close the chat')
  if not is_prompt then
    map_keys(keys.approve, 'approve', 'tiller: answer the pending approval')
  end
end

return M
