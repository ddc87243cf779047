"""A loopback OpenAI-compatible endpoint for stream_bench.py: answers every POST to
/v1/chat/completions with N text-delta chunks as SSE, at full speed, then [DONE].

    python bench/sse_source.py N   (prints its port on stdout, then serves until killed)
"""

import asyncio
import json
import sys


async def main() -> None:
    count = int(sys.argv[1])
    chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": "abcd"}}]})
    body = (f"data: {chunk}\n\n" * count).encode()
    final = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": count}})
    body += f"data: {final}\n\ndata: [DONE]\n\n".encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return  # the client closed its keep-alive connection
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body))
            for start in range(0, len(body), 16384):  # TCP-sized pieces, as a real server sends
                writer.write(body[start:start + 16384])
                await writer.drain()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


asyncio.run(main())
