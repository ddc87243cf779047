-- :checkhealth tiller — is the server there, which version and protocol, which providers
-- can be called (it starts a short-lived `tiller serve` and asks it).
local config = require('tiller.config')
local client = require('tiller.client')

local M = {}

local health = vim.health

-- initialize + agent/listModels against a fresh server; returns (answers, error).
local function ask_server(cmd)
  local answers, failure = {}, nil
  local ok, rpc = pcall(vim.lsp.rpc.start, cmd, {
    notification = function() end,
    server_request = function()
      return nil, vim.lsp.rpc.rpc_response_error(-32601)
    end,
    on_exit = function(code)
      failure = failure or ('the server exited with code ' .. code)
    end,
    on_error = function(_, err)
      failure = failure or tostring(err)
    end,
  }, { env = config.options.cmd_env, cwd = vim.fn.getcwd() })
  if not ok then
    return nil, tostring(rpc)
  end
  local function call(method, params)
    local done = false
    rpc.request(method, params, function(err, result)
      answers[method] = result
      failure = failure or (err and (err.message or vim.inspect(err)))
      done = true
    end)
    if not vim.wait(config.options.start_timeout, function()
      return done or failure ~= nil
    end, 20) then
      failure = failure or (method .. ' timed out')
    end
  end
  call('initialize', { processId = vim.fn.getpid(), rootUri = vim.NIL, capabilities = vim.empty_dict() })
  if not failure then
    rpc.notify('initialized', vim.empty_dict())
    call('agent/listModels', { all = true })
    call('shutdown', vim.NIL)
    rpc.notify('exit', vim.NIL)
  end
  rpc.terminate()
  return answers, failure
end

function M.check()
  health.start('tiller')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.10 or later is needed')
  end
  local cmd = config.options.cmd
  local executable = vim.fn.exepath(cmd[1])
  if executable == '' then
    health.error(cmd[1] .. ' not found', {
      'Install tiller (pip install tiller, or uv tool install from the repository)',
      "or set require('tiller').setup({ cmd = { '/path/to/tiller', 'serve' } })",
    })
    return
  end
  health.ok('found ' .. executable)
  local answers, failure = ask_server(cmd)
  if failure or not answers then
    health.error('`' .. table.concat(cmd, ' ') .. '` did not answer: ' .. tostring(failure))
    return
  end
  local init = answers.initialize or {}
  local info = init.serverInfo or {}
  health.ok(string.format('%s %s', info.name or 'server', info.version or '(no version)'))
  local protocol = vim.tbl_get(init, 'capabilities', 'experimental', 'tiller', 'protocolVersion')
  if protocol == client.PROTOCOL_VERSION then
    health.ok('protocol version ' .. protocol)
  else
    health.error(string.format('protocol version %s; this plugin speaks version %d', tostring(protocol),
      client.PROTOCOL_VERSION))
  end
  local models = answers['agent/listModels'] or { models = {} }
  local ready, hints = {}, {}
  for _, model in ipairs(models.models or {}) do
    if model.ready then
      ready[model.provider] = true
    elseif not hints[model.provider] then
      hints[model.provider] = model.setupHint or 'not ready'
    end
  end
  local names = vim.tbl_keys(ready)
  table.sort(names)
  for _, name in ipairs(names) do
    health.ok('provider ' .. name .. ': ready')
  end
  if #names == 0 then
    health.warn('no model provider is ready', { 'set an API key (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...) in the '
      .. "server's environment, or setup({ cmd_env = ... })" })
  end
  local others = {}
  for name, hint in pairs(hints) do
    if not ready[name] then
      table.insert(others, name .. ' (' .. hint .. ')')
    end
  end
  table.sort(others)
  if #others > 0 then
    local shown = vim.list_slice(others, 1, 8)
    health.info(string.format('%d more providers are not ready: %s%s', #others, table.concat(shown, ', '),
      #others > #shown and ', …' or ''))
  end
  if models.default then
    health.info('default model: ' .. models.default)
  end
end

return M
