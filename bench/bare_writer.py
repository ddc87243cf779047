"""The baseline for stream_bench.py: a bare Python JSON-RPC writer.

Waits for one request on stdin, then writes N `agent/event` notifications shaped like
tiller's text deltas (Content-Length framing, one json.dumps per message) as fast as it
can, then answers the request. `--flush-each` flushes after every message, as a streaming
server must (pygls does); without it, writes are block-buffered.

    python bench/bare_writer.py N [--flush-each]
"""

import json
import sys


def main() -> None:
    count, flush_each = int(sys.argv[1]), "--flush-each" in sys.argv
    stdin, out = sys.stdin.buffer, sys.stdout.buffer
    length = 0
    while line := stdin.readline().strip():  # the request's header
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    request = json.loads(stdin.read(length))
    for seq in range(1, count + 1):
        body = json.dumps({"jsonrpc": "2.0", "method": "agent/event", "params": {
            "sessionId": "0123456789ab", "seq": seq,
            "event": {"type": "message_update",
                      "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "abcd"}}}})
        out.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
        if flush_each:
            out.flush()
    body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": "stop"}})
    out.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    out.flush()
    stdin.read()  # stay alive until the client closes: it reads our CPU time from /proc


if __name__ == "__main__":
    main()
