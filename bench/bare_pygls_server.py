"""The cold-start baseline for stream_bench.py: a bare pygls LanguageServer on stdio that
answers `initialize` (and shutdown/exit) and nothing else."""

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")

if __name__ == "__main__":
    server.start_io()
