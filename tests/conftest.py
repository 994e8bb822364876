"""What every test folder shares (docs/testing.md says how to use it):

* ``executor``: a test that takes it runs once in the simulator (``sim``) and once on the
  GPU (``gpu``, marked ``gpu``); run the kernel with :func:`executors.run`.
* ``gpu``-marked tests need a CUDA GPU and driver; without one they skip cleanly.
* ``slow``-marked tests (or parametrisations) are sampled: by default a fixed quarter of
  each test's slow cases runs (at least one); ``--run-slow`` or ``TILEWISE_TESTS=all``
  (what CI sets) runs every one, and so do ``-m slow`` and a case named by its id on the
  command line. A test that scales its own work reads the ``run_slow`` fixture.
"""

import collections
import os
import pathlib
import sys
import zlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # errcheck.py, executors.py everywhere

SLOW_SAMPLE = 4  # by default one slow case in SLOW_SAMPLE runs (at least one per test)


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true",
                     default=os.environ.get("TILEWISE_TESTS", "") == "all",
                     help="run every slow-marked test case, not the default sample (also "
                          "TILEWISE_TESTS=all, which CI sets)")


def pytest_report_header(config):
    if not _sampling(config):
        return "slow tests: all"
    return (f"slow tests: a fixed 1-in-{SLOW_SAMPLE} sample per test (--run-slow or "
            "TILEWISE_TESTS=all runs all)")


@pytest.fixture
def run_slow(request) -> bool:
    """True when every slow case runs (CI): a test that scales its work does all of it."""
    return not _sampling(request.config)


@pytest.fixture
def torch():
    """torch, for the GPU tests that launch on its tensors (skipped where it is missing)."""
    return pytest.importorskip("torch")


@pytest.fixture(params=["sim", pytest.param("gpu", marks=pytest.mark.gpu)])
def executor(request) -> str:
    """``"sim"`` always, ``"gpu"`` (marked ``gpu``) where a GPU is present."""
    return request.param


def slow_sample(nodeids) -> set:
    """The slow cases that run by default: per test function, the ceil(n / SLOW_SAMPLE) of
    its n slow cases whose ids hash lowest (stable across runs, machines and xdist
    workers; a new case moves at most one other in or out)."""
    by_test = collections.defaultdict(list)
    for nid in nodeids:
        by_test[nid.split("[", 1)[0]].append(nid)
    keep = set()
    for ids in by_test.values():
        ids.sort(key=lambda nid: (zlib.crc32(nid.encode()), nid))
        keep.update(ids[:-(-len(ids) // SLOW_SAMPLE)])
    return keep


def _sampling(config) -> bool:
    return not (config.getoption("--run-slow") or "slow" in (config.option.markexpr or ""))


def pytest_collection_modifyitems(config, items):
    if _sampling(config):
        named = {arg.split("::", 1)[1] for arg in config.args if "::" in arg}
        slow = {item.nodeid for item in items if item.get_closest_marker("slow")
                and item.nodeid.split("::", 1)[1] not in named}
        dropped = slow - slow_sample(slow)
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
