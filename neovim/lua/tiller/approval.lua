-- Approvals: the proposed change opens in a split (a unified diff, or the command), and the
-- answer is picked with `vim.ui.select` (telescope, dressing or snacks users get their own
-- picker), with an optional reason typed with `vim.ui.input` on a rejection. A dismissed
-- picker leaves the approval pending: `a` in the chat (or :TillerApprove) asks again.
local session = require('tiller.session')

local M = {}

-- root -> { approval_id = string, win = window of the proposal }
local showing = {}

local function close_preview(root)
  local current = showing[root]
  showing[root] = nil
  if current and current.win and vim.api.nvim_win_is_valid(current.win) and #vim.api.nvim_list_wins() > 1 then
    vim.api.nvim_win_close(current.win, true)
    require('tiller.chat').restore_layout(session.get(root))
  end
end

local function preview(request)
  local lines, filetype
  if request.diff then
    lines, filetype = vim.split(request.diff, '\n', { plain = true }), 'diff'
    if lines[#lines] == '' then
      table.remove(lines)
    end
  else
    lines, filetype = vim.split(request.command or request.title, '\n', { plain = true }), 'sh'
  end
  local previous = vim.api.nvim_get_current_win()
  vim.cmd('botright ' .. math.min(math.max(#lines, 3), math.floor(vim.o.lines / 2)) .. 'new')
  local win, buf = vim.api.nvim_get_current_win(), vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  pcall(vim.api.nvim_buf_set_name, buf, 'tiller://approval/' .. request.approvalId)
  vim.wo[win].winbar = (request.title:gsub('%%', '%%%%'))
  if vim.api.nvim_win_is_valid(previous) then
    vim.api.nvim_set_current_win(previous)
  end
  return win
end

local function is_reject(option)
  return option.kind == 'reject_once' or option.kind == 'reject_always'
end

-- Ask about the chat's next pending approval, unless one is being asked already.
function M.ask(chat)
  local request = session.next_approval(chat)
  local current = showing[chat.root]
  if current and (not request or current.approval_id ~= request.approvalId) and not chat.pending[current.approval_id] then
    close_preview(chat.root) -- answered or cancelled elsewhere
    current = nil
  end
  if not request or current then
    return
  end
  showing[chat.root] = { approval_id = request.approvalId }
  showing[chat.root].win = preview(request)
  vim.ui.select(request.options, {
    prompt = request.title,
    kind = 'tiller.approval',
    format_item = function(option)
      return option.name
    end,
  }, function(option)
    close_preview(chat.root)
    if not option then
      session.note(chat, 'Approval still pending: ' .. request.title .. ' (press a in the chat, or :TillerApprove)', 'warn')
      return
    end
    local function answer(message)
      session.respond(chat, request.approvalId, option.optionId, message)
    end
    if is_reject(option) then
      vim.ui.input({ prompt = 'Reason for the model (optional): ' }, function(reason)
        answer(reason and reason ~= '' and reason or nil)
      end)
    else
      answer(nil)
    end
  end)
end

-- The chat's approvals changed (a new request, or one resolved).
function M.changed(chat)
  vim.schedule(function()
    M.ask(chat)
  end)
end

function M.showing(root)
  return showing[root]
end

return M
