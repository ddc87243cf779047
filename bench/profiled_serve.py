"""`tiller serve` under cProfile, for stream_bench.py --profile.

    TILLER_BENCH_PROFILE=out.prof python bench/profiled_serve.py

The server leaves with os._exit (so worker threads cannot hold it open), which skips
atexit: the profile is written from a wrapper around os._exit.
"""

from __future__ import annotations

import cProfile
import os
import sys

import tiller.lsp.transport  # noqa: F401  - imported before profiling starts
from tiller.cli import main

profile_path = os.environ["TILLER_BENCH_PROFILE"]
profiler = cProfile.Profile()
_real_exit = os._exit


def _exit(code: int) -> None:
    profiler.disable()
    profiler.dump_stats(profile_path)
    _real_exit(code)


os._exit = _exit  # type: ignore[assignment]
profiler.enable()
sys.exit(main(["serve"]))
