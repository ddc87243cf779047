"""`tiller sessions`: the saved sessions on the command line, without an editor.

    tiller sessions list [--cwd DIR] [--json]   newest first (from the index)
    tiller sessions show ID [--json]            the conversation, compactions included
    tiller sessions delete ID [ID ...]          remove the session files and their checkpoints

The data directory is the server's: `$TILLER_DATA_DIR`, else `$XDG_DATA_HOME/tiller`, else
`~/.local/share/tiller` (or `--data-dir`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # imported when the command runs: `tiller --help` and other commands stay light
    from .persistence.session_files import SessionStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="where sessions are saved (default: as `tiller serve`)")
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list saved sessions, newest first")
    listing.add_argument("--cwd", help="only the sessions of this working directory")
    listing.add_argument("--json", action="store_true", help="one JSON object per session")
    show = actions.add_parser("show", help="print a saved session's conversation")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="the session file's records, one JSON object a line")
    delete = actions.add_parser("delete", help="delete saved sessions")
    delete.add_argument("ids", nargs="+", metavar="ID")


def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from .persistence.session_files import SessionStore, default_data_dir

    store = SessionStore(default_data_dir(configured=args.data_dir))
    if args.action == "list":
        return _list(store, args.cwd, args.json, out)
    if args.action == "show":
        return _show(store, args.id, args.json, out, err)
    return _delete(store, args.ids, out, err)


def _list(store: SessionStore, cwd: str | None, as_json: bool, out: TextIO) -> int:
    from .persistence.session_index import SessionIndex

    for entry in SessionIndex(store.dir).list(cwd):
        if as_json:
            out.write(json.dumps({"sessionId": entry.id, "cwd": entry.cwd, "model": entry.model, "title": entry.title,
                                  "messageCount": entry.message_count, "created": entry.created,
                                  "updatedAt": entry.updated_at}, ensure_ascii=False) + "\n")
        else:
            out.write(f"{entry.id}  {_when(entry.updated_at)}  {entry.message_count:>5} msgs  {entry.model}  "
                      f"{entry.cwd}  {entry.title}\n")
    return 0


def _show(store: SessionStore, session_id: str, as_json: bool, out: TextIO, err: TextIO) -> int:
    if not store.exists(session_id):
        err.write(f"tiller: no saved session {session_id} in {store.dir}\n")
        return 1
    if as_json:
        with (store.dir / f"{session_id}.jsonl").open(encoding="utf-8", errors="replace") as handle:
            out.writelines(handle)
        return 0
    try:
        saved = store.load(session_id)
    except (OSError, ValueError) as error:
        err.write(f"tiller: cannot read session {session_id}: {error}\n")
        return 1
    out.write(f"session {saved.id}\ncwd     {saved.cwd}\nmodel   {saved.model}\n"
              f"created {_when(saved.created)}\nupdated {_when(saved.updated_at)}\n"
              f"{len(saved.messages)} messages\n")
    compactions = {position: record for position, record in saved.other_records if record.get("type") == "compaction"}
    for index, message in enumerate(saved.messages):
        if index in compactions:
            _compaction(compactions.pop(index), out)
        _message(message, out)
    for record in compactions.values():
        _compaction(record, out)
    return 0


def _delete(store: SessionStore, ids: list[str], out: TextIO, err: TextIO) -> int:
    status = 0
    for session_id in ids:
        try:
            _forget_checkpoints(store, session_id, err)
            deleted = store.delete(session_id)
        except (OSError, ValueError) as error:
            err.write(f"tiller: cannot delete {session_id}: {error}\n")
            status = 1
            continue
        if deleted:
            out.write(f"deleted {session_id}\n")
        else:
            err.write(f"tiller: no saved session {session_id}\n")
            status = 1
    return status


def _forget_checkpoints(store: SessionStore, session_id: str, err: TextIO) -> None:
    """The session's checkpoints (refs in the shadow repository of its workspace) go with it."""
    import asyncio

    from .host.checkpoints import forget_saved_session
    from .host.shadow_git import GitError, ShadowRepo

    if not store.exists(session_id):
        return
    try:
        cwd = store.cwd_of(session_id)
        if cwd is not None:
            asyncio.run(forget_saved_session(ShadowRepo(store.dir.parent, cwd), session_id))
    except (OSError, GitError) as error:
        err.write(f"tiller: could not remove the checkpoints of {session_id}: {error}\n")


def _message(message: Any, out: TextIO) -> None:
    role = getattr(message, "role", "?")
    content = getattr(message, "content", "")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [b.dump() for b in content]
    for block in blocks:
        if block["type"] == "text" and block["text"].strip():
            out.write(f"\n{role}: {block['text'].strip()}\n" if role != "toolResult" else
                      f"  {'✗' if message.is_error else '✓'} {message.tool_name}: {_first_line(block['text'])}\n")
        elif block["type"] == "toolCall":
            out.write(f"  → {block['name']} {json.dumps(block['arguments'], ensure_ascii=False)}\n")
        elif block["type"] == "image":
            out.write(f"  [image {block['mimeType']}]\n")
    if role == "assistant" and message.error_message:
        out.write(f"  [{message.stop_reason}: {message.error_message}]\n")


def _compaction(record: dict[str, Any], out: TextIO) -> None:
    summary = str(record.get("summary", ""))
    out.write(f"\n[compaction ({record.get('reason', '?')}): {record.get('tokensBefore', '?')} → "
              f"{record.get('tokensAfter', '?')} tokens; the model saw this summary from here on]\n{summary}\n")


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 100 else line[:99] + "…"


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000)) if ms else "-"
