"""What tiller tells about its work: logs, payload dumps and traces.

- `log_setup.py`: the `logging` configuration of a command (text or JSON lines, stderr or a
  file), with every known key scrubbed from whatever is written;
- `run_log.py`: follows one agent's runs, gives each LLM call its observer (`ai/call_log.py`
  logs the call) and logs one record per tool call;
- `payload_dump.py`: every request body and raw response stream written to files, keys
  redacted (`--dump-payloads DIR`);
- `tracing.py`: OpenTelemetry spans with the GenAI semantic conventions, imported only when
  tracing is on (the SDK is the optional `tiller[otel]` extra);
- `settings.py`: what the command line and the environment asked for, process-wide.
"""
