"""What every test folder shares (docs/testing.md says how to use it):

* ``executor``: a test that takes it runs once in the simulator (``sim``) and once on the
  GPU (``gpu``, marked ``gpu``); run the kernel with :func:`executors.run`.
* ``gpu``-marked tests need a CUDA GPU and driver; without one they skip cleanly.
* ``slow``-marked tests (or parametrisations) are sampled: by default a fixed quarter of
  each test's slow cases runs (at least one), or of a group's
  (``@pytest.mark.slow(group="...")``: tests of one kind sampled together); ``--run-slow`` or ``TILEWISE_TESTS=all``
  (what CI sets) runs every one, and so do ``-m slow`` and a case named by its id on the
  command line. A test that scales its own work reads the ``run_slow`` fixture (or, at
  import, ``sampling.RUN_SLOW`` and ``sampling.examples``).
"""

import os
import pathlib
import resource
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # errcheck.py, executors.py everywhere

import sampling  # noqa: E402  (found through the line above)

LONG_CALL_CPU_S = 3.0  # an unmarked test using more CPU than this is named in the summary


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true",
                     default=os.environ.get("TILEWISE_TESTS", "") == "all",
                     help="run every slow-marked test case, not the default sample (also "
                          "TILEWISE_TESTS=all, which CI sets)")


def _sampling(config) -> bool:
    return not (config.getoption("--run-slow") or "slow" in (config.option.markexpr or ""))


def pytest_configure(config):
    sampling.RUN_SLOW = not _sampling(config)


def pytest_report_header(config):
    if not _sampling(config):
        return "slow tests: all"
    return (f"slow tests: a fixed 1-in-{sampling.SLOW_SAMPLE} sample per test (--run-slow or "
            "TILEWISE_TESTS=all runs all)")


@pytest.fixture
def run_slow() -> bool:
    """True when every slow case runs (CI): a test that scales its work does all of it."""
    return sampling.RUN_SLOW


@pytest.fixture
def torch():
    """torch, for the GPU tests that launch on its tensors (skipped where it is missing)."""
    return pytest.importorskip("torch")


@pytest.fixture(params=["sim", pytest.param("gpu", marks=pytest.mark.gpu)])
def executor(request) -> str:
    """``"sim"`` always, ``"gpu"`` (marked ``gpu``) where a GPU is present."""
    return request.param


def pytest_collection_modifyitems(config, items):
    if _sampling(config):
        named = {arg.split("::", 1)[1] for arg in config.args if "::" in arg}
        slow = {item.nodeid: item.get_closest_marker("slow").kwargs.get("group")
                for item in items if item.get_closest_marker("slow")
                and item.nodeid.split("::", 1)[1] not in named}
        dropped = set(slow) - sampling.slow_sample(slow)
        if dropped:
            config.hook.pytest_deselected(items=[i for i in items if i.nodeid in dropped])
            items[:] = [item for item in items if item.nodeid not in dropped]
    _skip_gpu_tests_without_a_gpu(items)


def _skip_gpu_tests_without_a_gpu(items):
    marked = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not marked:
        return
    from tilewise.runtime import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in marked:
        item.add_marker(skip)


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Record the test's CPU time (its process and the subprocesses it waited for): unlike
    wall time, it hardly depends on what else the machine is doing."""
    start = _cpu_seconds()
    try:
        return (yield)
    finally:
        item.user_properties.append(("cpu_s", _cpu_seconds() - start))


def pytest_terminal_summary(terminalreporter):
    """Name the unmarked tests that used much CPU, so the suite does not grow unnoticed."""
    long = []
    for r in terminalreporter.stats.get("passed", []):
        cpu = dict(r.user_properties).get("cpu_s", 0.0)
        if r.when == "call" and cpu > LONG_CALL_CPU_S and "slow" not in r.keywords:
            long.append((cpu, r.nodeid))
    if long:
        terminalreporter.write_sep("-", f"{len(long)} test(s) not marked slow used over "
                                        f"{LONG_CALL_CPU_S:.0f} s of CPU (docs/testing.md)")
        for cpu, nodeid in sorted(long, reverse=True)[:10]:
            terminalreporter.write_line(f"{cpu:6.1f} s  {nodeid}")
