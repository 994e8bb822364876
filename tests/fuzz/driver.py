"""The fuzz driver: hands mutants to worker processes (:mod:`worker`), one at a time each,
and watches them. A worker silent past ``timeout`` seconds on one mutant is killed and the
mutant counted as a **hang**; a worker that dies (an LLVM fatal error aborts the process)
counts its mutant as an **abort**; either way a fresh worker takes the next mutant.

    python tests/fuzz/driver.py --mutants 20000 --workers 2 --base 1 --out report.json
    python tests/fuzz/driver.py --replay tests/sim/test_bulk.py:1234:1

The invariant (``Report.findings`` empty): every mutant ends in a right answer or a
TilewiseError; no other exception, no defect-worded error, no hang, no abort.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FINDINGS = ("exception", "defect", "hang", "abort")


@dataclass
class Report:
    results: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def counts(self) -> collections.Counter:
        return collections.Counter(r["status"] for r in self.results)

    @property
    def findings(self) -> list:
        return [r for r in self.results if r["status"] in FINDINGS]

    def summary(self) -> str:
        c = self.counts
        stages = collections.Counter(s for r in self.results for s in r.get("stages", ()))
        lines = [f"{len(self.results)} mutants in {self.seconds:.0f} s: "
                 + ", ".join(f"{k} {c[k]}" for k in ("ok", "error", "user", "gone", *FINDINGS)),
                 "stages reached: " + ", ".join(f"{k} {v}" for k, v in sorted(stages.items())),
                 "errors by kind: " + ", ".join(
                     f"{k} {v}" for k, v in collections.Counter(
                         r.get("kind") for r in self.results
                         if r["status"] == "error").most_common())]
        sigs = collections.Counter((r["status"], r.get("message", "")[:120])
                                   for r in self.findings)
        for (status, msg), n in sigs.most_common():
            ex = next(r for r in self.findings if r["status"] == status
                      and r.get("message", "")[:120] == msg)
            lines.append(f"  {status} x{n}: {msg}  [replay {ex['seed']}:{ex['index']}:"
                         f"{ex['base']}]")
        return "\n".join(lines)


class _Worker:
    def __init__(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(HERE),
                                             env.get("PYTHONPATH", "")])
        env["TILEWISE_CACHE"] = "0"
        env["TILEWISE_SIM_MAX_LOOP"] = str(1 << 14)  # an endless loop is reported sooner
        env.pop("TILEWISE_SIM_STRICT", None)
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, str(HERE / "worker.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, env=env, text=True, bufsize=1,
                                     start_new_session=True)
        self.job = None
        self.deadline = 0.0
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"fuzz worker failed to start: {line!r} {self.stderr_tail()}")

    def send(self, job: dict, timeout: float) -> None:
        self.job = job
        self.deadline = time.monotonic() + timeout
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def stderr_tail(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")[-2000:]

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def run(n_mutants: int, base: int = 1, workers: int = 2, timeout: float = 60.0,
        progress=None, seeds=None) -> Report:
    """Run ``n_mutants`` mutants (mutant i: seed ``i % len(seeds)``, index i)."""
    from mutate import load_seeds

    names = [s.name for s in (seeds or load_seeds())]
    jobs = collections.deque({"seed": names[i % len(names)], "index": i, "base": base}
                             for i in range(n_mutants))
    report, t0 = Report(), time.monotonic()
    sel = selectors.DefaultSelector()
    pool = [_Worker() for _ in range(min(workers, n_mutants))]
    for w in pool:
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        if jobs:
            w.send(jobs.popleft(), timeout)
    while any(w.job for w in pool):
        for key, _ in sel.select(timeout=1.0):
            w = key.data
            line = w.proc.stdout.readline()
            if line:
                report.results.append(json.loads(line))
                w.job = None
                if progress and report.results[-1]["status"] in FINDINGS:
                    progress(report)
            else:
                pool[pool.index(w)] = _replace(sel, w, report, "abort", timeout)
        for i, w in enumerate(pool):
            if w.job and time.monotonic() > w.deadline:
                pool[i] = _replace(sel, w, report, "hang", timeout)
        for w in pool:
            if w.job is None and jobs:
                w.send(jobs.popleft(), timeout)
                if progress and len(report.results) % 500 == 0:
                    progress(report)
    for w in pool:
        w.proc.stdin.close()
        w.kill()
    report.seconds = time.monotonic() - t0
    return report


def _replace(sel, w, report, status: str, timeout: float) -> _Worker:
    sel.unregister(w.proc.stdout)
    w.kill()
    tail = w.stderr_tail()
    report.results.append({**w.job, "status": status, "stage": "?",
                           "message": (f"no answer in {timeout:.0f} s" if status == "hang" else
                                       f"the worker died (exit status {w.proc.returncode}): "
                                       + (tail.strip().splitlines() or [""])[-1]),
                           "detail": tail})
    fresh = _Worker()
    sel.register(fresh.proc.stdout, selectors.EVENT_READ, fresh)
    return fresh


def replay(spec: str) -> dict:
    """Run one mutant in this process and show its source: ``SEED:INDEX:BASE``."""
    sys.path.insert(0, str(HERE))
    from harness import mutant_source, run_mutant
    from mutate import load_seeds

    name, index, base = spec.rsplit(":", 2)
    seed = next(s for s in load_seeds() if s.name == name)
    print(mutant_source(seed, int(index), int(base)))
    result = run_mutant(seed, int(index), int(base))
    print(json.dumps(result, indent=1))
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--base", type=int, default=1, help="the run's random seed")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant")
    ap.add_argument("--out", help="write every result as JSON here")
    ap.add_argument("--replay", help="SEED:INDEX:BASE: run one mutant here, show it")
    args = ap.parse_args(argv)
    if args.replay:
        replay(args.replay)
        return 0
    sys.path.insert(0, str(HERE))
    def progress(r):
        last = r.results[-1] if r.results else {}
        note = (f": {last['status']} {last.get('message', '')[:150]} [replay {last['seed']}:"
                f"{last['index']}:{last['base']}]" if last.get("status") in FINDINGS else "")
        print(f"... {len(r.results)} mutants, {len(r.findings)} findings{note}", flush=True)

    report = run(args.mutants, args.base, args.workers, args.timeout, progress=progress)
    print(report.summary())
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(report.results, indent=0))
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
