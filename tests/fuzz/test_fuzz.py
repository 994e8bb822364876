"""The quick fuzz run of the suite: mutants of the examples' and tests' kernels end in a
right answer or a TilewiseError — no other exception, no defect-worded error, no hang, no
abort. The long run (scripts/fuzz, 20,000+ mutants) is recorded in benchmarks/RESULTS.md.
The quick run is QUICK mutants in CI (--run-slow, TILEWISE_TESTS=all) and, by default,
QUICK_SAMPLE mutants of the seeds that are not HEAVY (docs/testing.md)."""

import functools
import os

import driver
import pytest
from mutate import GENERATED, load_seeds, make_mutant

QUICK = 150
QUICK_SAMPLE = 25
# Seeds whose mutants compile through ptxas and simulate a warp-specialised kernel at the
# example's size (5-15 s of CPU each): the default sample leaves them to CI's full run.
HEAVY = {"examples/attention.py", "examples/attention_backward.py", "examples/gemm_fp8.py",
         "examples/gemm_grouped.py", "examples/gemm_hopper.py", "examples/gemm_blackwell.py"}


@functools.cache
def _seeds():
    """Loading the seeds runs every seed module (~2 s): once per test process."""
    return load_seeds()


@pytest.mark.slow
def test_quick_fuzz_run_finds_nothing(run_slow):
    n = QUICK if run_slow else QUICK_SAMPLE
    seeds = _seeds() if run_slow else [s for s in _seeds() if s.name not in HEAVY]
    report = driver.run(n, base=20261130, workers=1, timeout=120, seeds=seeds)
    assert len(report.results) == n
    assert not report.findings, report.summary()
    c = report.counts
    assert c["ok"] > n // 15 and c["error"] > n // 15, report.summary()  # both exercised


@pytest.mark.slow
def test_the_driver_survives_an_abort_and_a_hang(monkeypatch):
    monkeypatch.setenv("TILEWISE_FUZZ_SELFTEST", "1")
    # two quick seeds: mutants 0 and 3 must finish well inside the 5 s (mutant 3 of the full
    # list is a Blackwell GEMM, seconds long on a busy machine)
    quick = [s for s in _seeds() if s.name in (GENERATED, "examples/ldgsts_copy.py")]
    report = driver.run(4, base=1, workers=1, timeout=5, seeds=quick)
    by_index = {r["index"]: r for r in report.results}
    assert sorted(by_index) == [0, 1, 2, 3]
    assert by_index[1]["status"] == "abort" and "exit status -6" in by_index[1]["message"]
    assert by_index[2]["status"] == "hang" and "no answer in 5 s" in by_index[2]["message"]
    assert by_index[3]["status"] not in driver.FINDINGS  # a fresh worker took over
    assert "abort x1" in report.summary() and "hang x1" in report.summary()


def test_mutants_are_reproducible_and_cover_the_seeds():
    seeds = _seeds()
    names = {s.name for s in seeds}
    assert GENERATED in names and "examples/ldgsts_copy.py" in names and len(seeds) >= 20
    s = next(x for x in seeds if x.name == "examples/tiled_copy.py")
    assert make_mutant(s, 7, 3) == make_mutant(s, 7, 3)
    assert make_mutant(s, 7, 3) != make_mutant(s, 8, 3)
    assert os.path.exists(os.path.join(driver.ROOT, "scripts", "fuzz"))
