"""A fuzz worker: reads ``{"seed": name, "index": i, "base": b}`` lines on stdin, runs each
mutant (:func:`harness.run_mutant`) and writes one JSON result line per mutant on stdout.
It prints ``ready`` first. It runs in a child process of the driver, so that a mutant that
aborts the process (an LLVM fatal error) or hangs is seen, reported and survived."""

from __future__ import annotations

import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import run_mutant  # noqa: E402
from mutate import load_seed  # noqa: E402


def main() -> None:
    warnings.simplefilter("ignore")
    seeds = {}  # loaded on first use: a worker started for a few mutants starts quickly
    out = sys.stdout
    sys.stdout = sys.stderr  # what mutants print must not mix with the results
    out.write("ready\n")
    out.flush()
    selftest = os.environ.get("TILEWISE_FUZZ_SELFTEST") == "1"
    for line in sys.stdin:
        req = json.loads(line)
        if selftest:
            _misbehave(req["index"])
        if req["seed"] not in seeds:
            seeds[req["seed"]] = load_seed(req["seed"])
        result = run_mutant(seeds[req["seed"]], req["index"], req["base"])
        out.write(json.dumps(result) + "\n")
        out.flush()


def _misbehave(index: int) -> None:
    """The driver's own test: mutant 1 aborts the process, mutant 2 hangs."""
    if index == 1:
        os.abort()
    if index == 2:
        import time

        time.sleep(3600)


if __name__ == "__main__":
    main()
