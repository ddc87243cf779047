-- User commands of tiller.nvim; everything loads on first use.
if vim.g.loaded_tiller then
  return
end
vim.g.loaded_tiller = true

if vim.fn.has('nvim-0.10') ~= 1 then
  vim.api.nvim_err_writeln('tiller.nvim needs Neovim 0.10 or later')
  return
end

local function tiller()
  return require('tiller')
end

local command = vim.api.nvim_create_user_command

command('Tiller', function()
  tiller().toggle()
end, { desc = 'Toggle the tiller chat' })

command('TillerPrompt', function(opts)
  local range = opts.range > 0 and { opts.line1, opts.line2 } or nil
  tiller().prompt(opts.args, { range = range })
end, { nargs = '+', range = true, desc = 'Prompt tiller (with a range: attach the selection)' })

command('TillerSteer', function(opts)
  tiller().steer(opts.args)
end, { nargs = '+', desc = 'Steer the running tiller agent' })

command('TillerFollowUp', function(opts)
  tiller().follow_up(opts.args)
end, { nargs = '+', desc = 'Queue a follow-up for the tiller agent' })

command('TillerAbort', function()
  tiller().abort()
end, { desc = 'Abort the tiller run' })

command('TillerApprove', function()
  tiller().approve()
end, { desc = 'Answer the pending tiller approval' })

command('TillerSessions', function()
  tiller().sessions()
end, { desc = 'Resume a saved tiller session' })

command('TillerModel', function(opts)
  tiller().model(opts.args)
end, { nargs = '?', desc = 'Pick the tiller model' })

command('TillerRules', function()
  tiller().rules()
end, { desc = 'List the saved tiller command rules; remove the one picked' })

command('TillerRewind', function()
  tiller().rewind()
end, { desc = 'Rewind files and/or the tiller conversation to before a prompt' })

command('TillerTools', function()
  tiller().tools()
end, { desc = 'Show the tools of the tiller agent and its MCP servers' })

command('TillerApprovalMode', function(opts)
  tiller().approval_mode(opts.args)
end, {
  nargs = 1,
  complete = function()
    return { 'ask', 'acceptEdits', 'yolo' }
  end,
  desc = 'Set the tiller approval mode',
})
