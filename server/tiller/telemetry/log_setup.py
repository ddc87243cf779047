"""The `logging` setup of `tiller serve`, `tiller acp` and `tiller run`.

Records go to stderr (the default) or to `--log-file PATH`, as human-readable lines or as
JSON lines (`--log-format json`): one object per record with `time`, `level`, `logger`,
`message` and the record's structured fields (given as `extra={"tiller": {...}}`, e.g. every
field of an LLM call), so `jq 'select(.event == "llm_call")'` finds them. Both formats scrub
every API key tiller has sent from the finished text.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal

from ..ai.call_log import redact_known_secrets

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Libraries that log every request or message they handle at INFO: too much beside ours.
_CHATTY = ("pygls", "httpx", "httpcore")


class TextFormatter(logging.Formatter):
    def __init__(self, fmt: str = TEXT_FORMAT) -> None:
        super().__init__(fmt)

    def format(self, record: logging.LogRecord) -> str:
        return redact_known_secrets(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per record; the standard library's json is all it takes."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "tiller", None)
        if isinstance(fields, dict):
            for key, value in fields.items():
                entry.setdefault(key, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return redact_known_secrets(json.dumps(entry, ensure_ascii=False, default=str))


def configure_logging(level: str, log_format: LogFormat = "text", log_file: str | None = None) -> None:
    """Send every record at `level` or above to `log_file` (else stderr) in `log_format`.
    Raises OSError when the file cannot be opened."""
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8") if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    # pygls logs every error answer with a traceback; tiller logs the ones that matter.
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)
