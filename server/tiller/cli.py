"""The `tiller` command line.

    tiller serve [--tcp PORT]                 the agent server an editor starts (stdio)
    tiller acp                                the same agent over the Agent Client Protocol (Zed, ...)
    tiller run PROMPT [--model provider/id]   one prompt, streamed to the terminal
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tiller", description="An agent server for code editors.")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="stream one reply to PROMPT on the terminal")
    run.add_argument("prompt")
    run.add_argument("--model", help='"provider/modelId" (default: from config/env, else the local model)')
    run.add_argument("--system", default=DEFAULT_SYSTEM_PROMPT, help="system prompt")
    run.add_argument("--thinking", default="off", choices=["off", "minimal", "low", "medium", "high", "xhigh"])
    run.add_argument("--json", action="store_true", help="print every agent event as one JSON line")

    chat = commands.add_parser("chat", help="chat with an agent through `tiller serve` (one PROMPT, or interactive)")
    from .chat.terminal import add_arguments as add_chat_arguments

    add_chat_arguments(chat)

    serve = commands.add_parser("serve", help="serve the agent protocol to an editor (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="use stdin/stdout (the default)")
    serve.add_argument("--tcp", type=int, metavar="PORT", help="listen on 127.0.0.1:PORT instead (debugging)")
    serve.add_argument("--log-level", default="WARNING", help="stderr log level (DEBUG, INFO, WARNING, ...)")
    serve.add_argument("--max-frame-bytes", type=int, default=64 * 1024 * 1024, metavar="N",
                       help="refuse (and skip) a message larger than N bytes (default: 64 MiB)")

    acp = commands.add_parser("acp", help="serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim ACP clients)")
    acp.add_argument("--log-level", default="WARNING", help="stderr log level (DEBUG, INFO, WARNING, ...)")

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


async def _run(args: argparse.Namespace) -> int:
    from .agent import Agent
    from .ai.connections import close_clients
    from .ai.models import ModelCatalog
    from .ai.types import AssistantMessage, total_usage
    from .chat.render import TerminalRenderer
    from .protocol.wire_events import wire_event

    catalog = ModelCatalog.load()
    model = catalog.resolve(args.model) if args.model else catalog.default_model()
    agent = Agent(get_api_key=catalog.api_key, get_stream_options=catalog.stream_options)
    agent.set_model(model)
    agent.set_system_prompt(args.system)
    agent.set_thinking_level(args.thinking)
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
    import logging

    from .lsp.transport import serve_stdio, serve_tcp

    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # pygls logs every message it sends at INFO: far too much for a streaming server.
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLogger().level))
    # pygls logs every error answer with a traceback; tiller logs the ones that matter.
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)
    if args.tcp:
        return serve_tcp(args.tcp, max_frame_bytes=args.max_frame_bytes)
    return serve_stdio(args.max_frame_bytes)


def _acp(args: argparse.Namespace) -> int:
    import logging

    from .acp.serve import serve_acp

    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
