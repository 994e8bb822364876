"""How much of the suite runs (docs/testing.md): all of it in CI, a fixed sample of the
slow cases by default. tests/conftest.py sets :data:`RUN_SLOW` before any test module is
imported, so module-level code (a hypothesis ``@settings``) may read it too."""

from __future__ import annotations

import collections
import zlib

RUN_SLOW = False  # --run-slow, TILEWISE_TESTS=all (CI) or -m slow: every slow case runs
SLOW_SAMPLE = 4  # by default one slow case in SLOW_SAMPLE runs (at least one per test)


def examples(n_all: int) -> int:
    """A hypothesis ``max_examples``: ``n_all`` in CI, a third of it (at least 10) by
    default: ``@settings(max_examples=examples(150), deadline=None)``."""
    return n_all if RUN_SLOW else max(10, n_all // 3)


def slow_sample(nodeids) -> set:
    """The slow cases that run by default: per group, the ceil(n / SLOW_SAMPLE) of its n
    slow cases whose ids hash lowest (stable across runs, machines and xdist workers; a new
    case moves at most one other in or out). ``nodeids`` is the ids (a group is a test
    function's cases) or a dict of id -> group (``@pytest.mark.slow(group="...")`` puts
    tests of one kind together, so one of several single-case tests runs)."""
    groups = nodeids if isinstance(nodeids, dict) else {nid: None for nid in nodeids}
    by_group = collections.defaultdict(list)
    for nid, group in groups.items():
        by_group[group or nid.split("[", 1)[0]].append(nid)
    keep = set()
    for ids in by_group.values():
        ids.sort(key=lambda nid: (zlib.crc32(nid.encode()), nid))
        keep.update(ids[:-(-len(ids) // SLOW_SAMPLE)])
    return keep
