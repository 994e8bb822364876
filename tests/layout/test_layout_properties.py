"""Laws of the layout algebra, checked with hypothesis on random layouts."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sampling import examples
from tilewise.errors import LayoutError
from tilewise.layout import Iter, TileLayout

FAST = settings(max_examples=examples(60), deadline=None)

SHARD_AXES = ["m", "m", "laneid", "warpid", "TLane"]
REPLICA_AXES = ["laneid", "warpid", "bx"]


@st.composite
def iters(draw, axes, max_len, min_len=1):
    n = draw(st.integers(min_len, max_len))
    return [
        Iter(
            draw(st.sampled_from([1, 2, 3, 4, 6, 8])),
            draw(st.integers(0, 9)),
            draw(st.sampled_from(axes)),
        )
        for _ in range(n)
    ]


@st.composite
def layouts(draw, with_replica=True):
    shard = draw(iters(SHARD_AXES, 4))
    replica = draw(iters(REPLICA_AXES, 2, min_len=0)) if with_replica else []
    offset = draw(
        st.dictionaries(st.sampled_from(["m", "laneid", "warpid"]), st.integers(0, 7), max_size=2)
    )
    return TileLayout._build(shard, replica, offset)


def _same_places(a: dict, b: dict) -> bool:
    """Equal places; an axis one side does not mention is at 0 there."""
    return all(a.get(k, 0) == b.get(k, 0) for k in set(a) | set(b))


def _same_np(a: dict, b: dict, n: int) -> bool:
    zero = np.zeros(n, np.int64)
    return all(np.array_equal(a.get(k, zero), b.get(k, zero)) for k in set(a) | set(b))


def _all(lay: TileLayout) -> np.ndarray:
    return np.arange(lay.size())


@FAST
@given(layouts())
def test_canonicalize_keeps_apply(lay):
    canon = lay.canonicalize()
    assert canon == lay and hash(canon) == hash(lay)
    assert canon.canonicalize().shard == canon.shard
    assert _same_np(canon.apply_np(_all(lay)), lay.apply_np(_all(lay)), lay.size())
    assert canon.replicas() == lay.canonicalize().replicas()
    for lin in range(0, lay.size(), max(1, lay.size() // 7)):
        assert _same_places(canon.apply(lin), lay.apply(lin))


@FAST
@given(layouts())
def test_apply_np_agrees_with_apply(lay):
    n = lay.size()
    per_dim = np.array(list(itertools.islice(itertools.product(*map(range, lay.shape)), 64)))
    got = lay.apply_np(per_dim)
    for i, coord in enumerate(per_dim):
        one = lay.apply(*coord)
        assert {k: int(v[i]) for k, v in got.items()} == one
    lin = lay.apply_np(_all(lay))
    for i in range(0, n, max(1, n // 9)):
        assert {k: int(v[i]) for k, v in lin.items()} == lay.apply(i)


@FAST
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
def test_permuted_rowmajor_strides_are_one_to_one(extents, data):
    order = data.draw(st.permutations(range(len(extents))))
    strides = [0] * len(extents)
    acc = 1
    for k in reversed(order):  # the last of `order` is innermost in memory
        strides[k] = acc
        acc *= extents[k]
    lay = TileLayout.from_iters([(e, s, "m") for e, s in zip(extents, strides)])
    m = lay.apply_np(_all(lay))["m"]
    assert sorted(m.tolist()) == list(range(lay.size()))
    assert lay.span() == lay.size()
    assert lay.is_bijective_on("m") and lay.is_injective()


@st.composite
def regions(draw, dims):
    out = []
    for d in dims:
        start = draw(st.integers(0, d - 1))
        out.append((start, draw(st.integers(start + 1, d))))
    return out


@FAST
@given(layouts(), st.data())
def test_slice_then_apply_is_apply_of_shifted(lay, data):
    region = data.draw(regions(lay.shape))
    sub = lay.slice(region)
    sub_shape = tuple(b - a for a, b in region)
    assert sub.size() == math.prod(sub_shape)
    for c in itertools.islice(itertools.product(*map(range, sub_shape)), 100):
        shifted = tuple(x + a for x, (a, _) in zip(c, region))
        assert _same_places(sub.apply(*c, shape=sub_shape), lay.apply(*shifted))


def _factorisations(n: int) -> list[tuple[int, ...]]:
    divisors = [d for d in range(2, n + 1) if n % d == 0]
    out = [(n,)]
    for d in divisors:
        if d < n:
            out += [(d, *rest) for rest in _factorisations(n // d)]
    return out


@FAST
@given(layouts(), st.data())
def test_group_round_trips(lay, data):
    shape = data.draw(st.sampled_from(_factorisations(lay.size())[:40]))
    try:
        grouped = lay.group(shape)
    except LayoutError:
        assume(False)
    n = lay.size()
    assert grouped == lay
    back = grouped.group(lay.shape)
    assert back == lay
    assert _same_np(back.apply_np(_all(lay)), lay.apply_np(_all(lay)), n)
    coords = np.array(list(itertools.islice(itertools.product(*map(range, shape)), 200)))
    lin = np.ravel_multi_index(coords.T, shape)
    assert _same_np(grouped.apply_np(coords, shape=shape), lay.apply_np(lin), len(lin))


@FAST
@given(layouts(with_replica=False), st.data())
def test_permute_moves_coordinates(lay, data):
    order = data.draw(st.permutations(range(len(lay.shape))))
    perm = lay.permute(order)
    for c in itertools.islice(itertools.product(*map(range, lay.shape)), 50):
        new = tuple(c[i] for i in order)
        assert _same_places(perm.apply(*new), lay.apply(*c))


@FAST
@given(layouts())
def test_storage_and_threads_cover_the_layout(lay):
    who, where = lay.split_threads()
    assert who.size() * where.size() == lay.size()
    assert all(not a.is_execution for a in where.axes())
    assert all(a.is_execution for a in who.axes())
