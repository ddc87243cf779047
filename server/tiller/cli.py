"""The `tiller` command line.

    tiller serve [--tcp PORT]                 the agent server an editor starts (stdio)
    tiller acp                                the same agent over the Agent Client Protocol (Zed, ...)
    tiller run PROMPT [--model provider/id]   one prompt, streamed to the terminal
      (these three also take --log-level, --log-format text|json, --log-file, --dump-payloads, --otel)
    tiller chat [PROMPT] [--json] [--cwd DIR] a client of `tiller serve`: one prompt, or interactive
    tiller models                             the catalogue and which providers are ready
    tiller sessions list|show ID|delete ID    the saved sessions
    tiller schema [-o FILE]                   the JSON Schema of the wire types
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any, TextIO

# Each command imports what it needs: `tiller chat` is only a client and must not pay for
# the agent, the providers and pydantic models it never uses.

DEFAULT_SYSTEM_PROMPT = "You are a helpful, concise assistant."
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tiller", description="An agent server for code editors.")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="stream one reply to PROMPT on the terminal")
    run.add_argument("prompt")
    run.add_argument("--model", help='"provider/modelId" (default: from config/env, else the local model)')
    run.add_argument("--system", default=DEFAULT_SYSTEM_PROMPT, help="system prompt")
    run.add_argument("--thinking", default="off", choices=["off", "minimal", "low", "medium", "high", "xhigh"])
    run.add_argument("--json", action="store_true", help="print every agent event as one JSON line")
    _add_telemetry_arguments(run, default_level="WARNING unless --log-file or --log-format json, then INFO")

    chat = commands.add_parser("chat", help="chat with an agent through `tiller serve` (one PROMPT, or interactive)")
    from .chat.terminal import add_arguments as add_chat_arguments

    add_chat_arguments(chat)

    serve = commands.add_parser("serve", help="serve the agent protocol to an editor (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="use stdin/stdout (the default)")
    serve.add_argument("--tcp", type=int, metavar="PORT", help="listen on 127.0.0.1:PORT instead (debugging)")
    _add_telemetry_arguments(serve, default_level="INFO")
    serve.add_argument("--max-frame-bytes", type=int, default=64 * 1024 * 1024, metavar="N",
                       help="refuse (and skip) a message larger than N bytes (default: 64 MiB)")

    acp = commands.add_parser("acp", help="serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim ACP clients)")
    _add_telemetry_arguments(acp, default_level="INFO")

    models = commands.add_parser("models", help="list the models of ready providers (a key set, a local server up)")
    models.add_argument("query", nargs="*", help="words that must all occur in a model's name or provider/id")
    models.add_argument("--all", action="store_true", help="also list providers that are not ready")

    sessions = commands.add_parser("sessions", help="list, show or delete saved sessions")
    from .sessions_command import add_arguments as add_sessions_arguments

    add_sessions_arguments(sessions)

    schema = commands.add_parser("schema", help="print the JSON Schema of tiller's wire types")
    schema.add_argument("-o", "--output", help="write to this file instead of stdout")

    args = parser.parse_args(argv)
    if args.command == "chat":
        from .chat.terminal import run as run_chat

        return run_chat(args)
    if args.command == "sessions":
        from .sessions_command import run as run_sessions

        return run_sessions(args)

    from .ai.models import ModelConfigError, ModelError

    if args.command in ("run", "serve", "acp") and not _setup_telemetry(args):
        return 2
    try:
        if args.command == "run":
            return asyncio.run(_run(args))
        if args.command == "serve":
            return _serve(args)
        if args.command == "acp":
            return _acp(args)
        if args.command == "models":
            return asyncio.run(_models(" ".join(args.query), include_all=args.all))
        if args.command == "schema":
            return _schema(args.output)
    except (ModelError, ModelConfigError) as error:
        print(f"tiller: {error}", file=sys.stderr)
        return 2
    return 0


def _add_telemetry_arguments(command: argparse.ArgumentParser, *, default_level: str) -> None:
    command.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, metavar="LEVEL",
                         help=f"log records at LEVEL and above: {', '.join(LOG_LEVELS)} (default: {default_level})")
    command.add_argument("--log-format", choices=["text", "json"], default="text",
                         help="human-readable lines (default) or one JSON object per line")
    command.add_argument("--log-file", metavar="PATH", help="append the log to PATH instead of stderr")
    command.add_argument("--dump-payloads", metavar="DIR",
                         help="write every LLM request and raw response to DIR, keys redacted (or TILLER_DUMP_PAYLOADS)")
    command.add_argument("--otel", action="store_true",
                         help="send OpenTelemetry spans to OTEL_EXPORTER_OTLP_ENDPOINT (needs tiller[otel]; "
                              "on by itself when that variable is set)")


def _setup_telemetry(args: argparse.Namespace) -> bool:
    from .telemetry import settings as telemetry
    from .telemetry.log_setup import configure_logging

    level = args.log_level
    if level is None:  # `tiller run` prints its reply on the terminal: only warnings beside it
        quiet = args.command == "run" and not args.log_file and args.log_format == "text"
        level = "WARNING" if quiet else "INFO"
    try:
        configure_logging(level, args.log_format, args.log_file)
    except OSError as error:
        print(f"tiller: cannot open the log file: {error}", file=sys.stderr)
        return False
    telemetry.configure(dump_dir=args.dump_payloads, tracing=True if args.otel else None)
    return True


async def _run(args: argparse.Namespace) -> int:
    import uuid

    from .agent import Agent
    from .ai.connections import close_clients
    from .ai.models import ModelCatalog
    from .ai.types import AssistantMessage, total_usage
    from .chat.render import TerminalRenderer
    from .protocol.wire_events import wire_event
    from .telemetry import settings as telemetry

    catalog = ModelCatalog.load()
    model = catalog.resolve(args.model) if args.model else catalog.default_model()
    agent = Agent(get_api_key=catalog.api_key, get_stream_options=catalog.stream_options)
    agent.set_model(model)
    agent.set_system_prompt(args.system)
    agent.set_thinking_level(args.thinking)
    telemetry.observe_agent(agent, uuid.uuid4().hex[:12])
    # The same rendering as `tiller chat`, fed the events as they would go on the wire.
    ui = TerminalRenderer(sys.stdout, sys.stderr)
    agent.subscribe(_JsonPrinter(sys.stdout) if args.json else lambda event: ui.event({"event": wire_event(event).dump()}))

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, agent.abort)  # Ctrl-C stops the run, keeps the text
    try:
        await agent.prompt(args.prompt)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await close_clients()
        telemetry.shutdown()
    if not args.json:
        ui.run_ended({"usage": total_usage(agent.state.messages).dump()}, model.ref)
    last = agent.state.messages[-1]
    if isinstance(last, AssistantMessage) and last.stop_reason in ("error", "aborted"):
        ui.error(last.error_message or last.stop_reason)
        return 130 if last.stop_reason == "aborted" else 1
    return 0


class _JsonPrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Any) -> None:
        self.out.write(event.to_json() + "\n")
        self.out.flush()


def _serve(args: argparse.Namespace) -> int:
    from .lsp.transport import serve_stdio, serve_tcp

    if args.tcp:
        return serve_tcp(args.tcp, max_frame_bytes=args.max_frame_bytes)
    return serve_stdio(args.max_frame_bytes)


def _acp(args: argparse.Namespace) -> int:
    from .acp.serve import serve_acp

    return serve_acp()


async def _models(query: str, *, include_all: bool) -> int:
    from .ai.models import ModelCatalog

    catalog = ModelCatalog.load()
    default = catalog.default_model().ref
    found = await catalog.list_models(query, include_all=include_all)
    rows = [("", "MODEL", "CONTEXT", "OUTPUT", "$/MTOK IN/OUT", "STATUS")]
    for listing in found.models:
        model = listing.model
        price = f"{model.cost.input:g} / {model.cost.output:g}" if model.cost.input or model.cost.output else "-"
        status = "ready" if listing.ready else catalog.setup_hint(model.provider)
        rows.append(("*" if model.ref == default else "", model.ref, _tokens(model.context_window),
                     _tokens(model.max_tokens), price, status))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    if not include_all:
        hidden = (await catalog.list_models(query, include_all=True)).total - found.total
        if hidden:
            again = f"tiller models {query} --all" if query else "tiller models --all"
            print(f"\n{hidden} more from providers that are not ready: {again}")
    return 0


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{round(count / 1_000_000, 2):g}M"
    return f"{round(count / 1000)}k" if count >= 1000 else str(count)


def _schema(output: str | None) -> int:
    from .schema import wire_schema_text

    text = wire_schema_text()
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
