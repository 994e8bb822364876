"""tilewise.sched: the schedulers' walks, run in the simulator by several CTAs, against a
plain Python model of each order (every unit exactly once, in the documented order)."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import T
from tilewise.sched import GroupedTiles, HybridStreamK, Snake, SplitK, StreamK


def grouped(t, m_tiles, n_tiles, group_m):
    """The documented grouped order, in Python."""
    in_group = group_m * n_tiles
    first = t // in_group * group_m
    rows = min(m_tiles - first, group_m)
    return first + t % in_group % rows, t % in_group // rows


@pytest.mark.parametrize("m_tiles, n_tiles, ctas, group_m",
                         [(5, 4, 3, 2), (7, 3, 4, 8), (1, 9, 2, 8), (4, 4, 16, 3)])
def test_grouped_tiles_cover_the_grid_once_in_order(m_tiles, n_tiles, ctas, group_m):
    n = m_tiles * n_tiles
    M = T.int32()

    @T.prim_func
    def k(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n, 4), "int32")
        B = T.match_buffer(B_ptr, (M, 1), "int32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([32])
        sched = GroupedTiles(M, n_tiles, first=bx, step=ctas, group_m=group_m)
        if tid == 0:
            for j in sched.tiles():
                mt, nt = sched.coords(j)
                t = sched.index(j)
                A[t, 0] = mt
                A[t, 1] = nt
                A[t, 2] = bx
                A[t, 3] = j

    A = np.full((n, 4), -1, np.int32)
    tw.simulate(k, A, np.zeros((m_tiles, 1), np.int32))  # m_tiles as a run-time size
    want = [(*grouped(t, m_tiles, n_tiles, group_m), t % ctas, t // ctas) for t in range(n)]
    np.testing.assert_array_equal(A, np.array(want))
    assert len({(a, b) for a, b, _, _ in want}) == n  # each tile once


@pytest.mark.parametrize("m_tiles, n_tiles, k_tiles, splits, ctas",
                         [(2, 3, 7, 3, 4), (3, 2, 2, 4, 5), (1, 2, 5, 2, 8)])
def test_split_k_slices_each_tile(m_tiles, n_tiles, k_tiles, splits, ctas):
    n = m_tiles * n_tiles * splits

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (n, 5), "int32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([32])
        sched = SplitK(m_tiles, n_tiles, k_tiles, splits, first=bx, step=ctas, group_m=2)
        if tid == 0:
            for j in sched.units():
                mt, nt, s, kb, ke = sched.coords(j)
                u = sched.index(j)
                A[u, 0] = mt
                A[u, 1] = nt
                A[u, 2] = s
                A[u, 3] = kb
                A[u, 4] = ke

    A = np.full((n, 5), -1, np.int32)
    tw.simulate(k, A)
    for tile in range(m_tiles * n_tiles):
        rows = A[tile * splits:(tile + 1) * splits]
        assert (rows[:, :2] == grouped(tile, m_tiles, n_tiles, 2)).all()
        assert list(rows[:, 2]) == list(range(splits))
        assert rows[0, 3] == 0 and rows[-1, 4] == k_tiles
        assert (rows[1:, 3] == rows[:-1, 4]).all()  # the slices tile K, no gap, no overlap
        assert (rows[:, 4] - rows[:, 3]).max() - (rows[:, 4] - rows[:, 3]).min() <= 1


@pytest.mark.parametrize("m_tiles, n_tiles, k_tiles, ctas",
                         [(5, 4, 7, 3), (2, 2, 3, 5), (1, 1, 16, 4)])
def test_stream_k_segments_cut_the_k_blocks_evenly(m_tiles, n_tiles, k_tiles, ctas):
    total = m_tiles * n_tiles * k_tiles

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (total, 5), "int32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([32])
        sk = StreamK(m_tiles, n_tiles, k_tiles, first=bx, ctas=ctas, group_m=2)
        if tid == 0:
            it = sk.begin
            while it < sk.end:
                mt, nt, kb, ke = sk.segment(it)
                A[it, 0] = mt
                A[it, 1] = nt
                A[it, 2] = kb
                A[it, 3] = ke
                A[it, 4] = bx
                it = it + (ke - kb)

    A = np.full((total, 5), -1, np.int32)
    tw.simulate(k, A)
    seg = A[A[:, 0] >= 0]
    covered = np.zeros((m_tiles, n_tiles, k_tiles), int)
    for mt, nt, kb, ke, _ in seg:
        covered[mt, nt, kb:ke] += 1
    assert (covered == 1).all()  # every K block of every tile exactly once
    per_cta = np.bincount(seg[:, 4], weights=seg[:, 3] - seg[:, 2], minlength=ctas)
    assert per_cta.max() - per_cta.min() <= 1  # the K blocks are shared out evenly


@pytest.mark.parametrize("count, ctas", [(11, 4), (8, 4), (3, 5), (13, 3)])
def test_snake_deals_each_unit_once_alternating_direction(count, ctas):
    """Round r: CTA c takes unit r*ctas + c (r even) or r*ctas + ctas-1-c (r odd); the
    last round's missing units are skipped by the guard; a run-time count works too."""
    N = T.int32()

    @T.prim_func
    def k(A_ptr: T.handle):
        A = T.match_buffer(A_ptr, (N, 2), "int32")
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([32])
        sched = Snake(N, first=bx, step=ctas)
        if tid == 0:
            for r in sched.rounds():
                u = sched.index(r)
                if u >= sched.count:
                    continue
                A[u, 0] = bx
                A[u, 1] = r

    A = np.full((count, 2), -1, np.int32)
    tw.simulate(k, A)
    want = [((u % ctas) if u // ctas % 2 == 0 else ctas - 1 - u % ctas, u // ctas)
            for u in range(count)]
    np.testing.assert_array_equal(A, np.array(want))


def test_snake_balances_a_longest_first_list():
    """The reason for the deal: units of lengths n, n-1, ..., 1 over c CTAs. Round robin
    gives CTA 0 the longest of every round; the snake's heaviest CTA carries less."""
    lengths = list(range(40, 0, -1))
    ctas = 6

    def heaviest(owner):
        loads = [0] * ctas
        for u, w in enumerate(lengths):
            loads[owner(u)] += w
        return max(loads)

    snake = heaviest(lambda u: u % ctas if u // ctas % 2 == 0 else ctas - 1 - u % ctas)
    robin = heaviest(lambda u: u % ctas)
    assert snake < robin and snake - sum(lengths) / ctas < 0.05 * sum(lengths) / ctas


@pytest.mark.parametrize("m_tiles, n_tiles, k_tiles, ctas, min_blocks",
                         [(5, 4, 7, 3, 1), (2, 3, 5, 4, 1), (1, 3, 16, 4, 3), (3, 3, 6, 4, 2),
                          (2, 2, 9, 2, 1), (4, 4, 5, 8, 1)])
def test_hybrid_stream_k_covers_every_block_once_and_helpers_come_first(
        m_tiles, n_tiles, k_tiles, ctas, min_blocks):
    """Whole waves round robin, the rest by K blocks in backward-dealt ranges: every K block
    of every tile once; a split tile's finisher (its first blocks) is told exactly the
    ranges that hold the rest, each a lower-numbered CTA's, each its CTA's first segment."""
    count = m_tiles * n_tiles
    K = T.int32()

    @T.prim_func
    def k(A_ptr: T.handle, S_ptr: T.handle):
        A = T.match_buffer(A_ptr, (count, K), "int32")  # the CTA of each (tile, K block)
        S = T.match_buffer(S_ptr, (ctas, 4, 5), "int32")  # each CTA's segments
        T.device_entry()
        bx = T.cta_id([ctas])
        tid = T.thread_id([32])
        sk = HybridStreamK(m_tiles, n_tiles, K, first=bx, ctas=ctas, group_m=2,
                           min_blocks=min_blocks)
        if tid == 0:
            for j in sk.tiles():
                mt, nt = sk.coords(j)
                for kt in range(K):
                    A[mt * n_tiles + nt, kt] = bx
            for g in sk.segments():
                t, mt, nt, kb, ke = sk.segment(g)
                for kt in range(kb, ke):
                    A[mt * n_tiles + nt, kt] = bx
                lo, hi = sk.helpers(t)
                S[bx, g, 0] = t
                S[bx, g, 1] = kb
                S[bx, g, 2] = ke
                S[bx, g, 3] = lo
                S[bx, g, 4] = hi

    A = np.full((count, k_tiles), -1, np.int32)
    S = np.full((ctas, 4, 5), -1, np.int32)
    tw.simulate(k, A, S)
    assert (A >= 0).all()  # every K block of every tile (each written once: no race)
    waves = count // ctas
    segs = {}  # stream-K tile -> [(cta, kb, ke, lo, hi)]
    for c in range(ctas):
        for g in range(4):
            t, kb, ke, lo, hi = S[c, g]
            if t >= 0:
                segs.setdefault(int(t), []).append((c, int(kb), int(ke), int(lo), int(hi)))
    assert sorted(segs) == list(range(count - waves * ctas))
    for t, parts in segs.items():
        fin = [p for p in parts if p[1] == 0]
        assert len(fin) == 1
        c, _, _, lo, hi = fin[0]
        helpers = sorted(ctas - 1 - r for r in range(lo, hi))
        assert helpers == sorted(p[0] for p in parts if p[1] > 0)
        assert all(h < c for h in helpers)  # the finisher waits only for earlier CTAs
        covered = sorted((kb, ke) for _, kb, ke, _, _ in parts)
        assert covered[0][0] == 0 and covered[-1][1] == k_tiles
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
    for c in range(ctas):  # a helper segment is its CTA's first
        assert all(S[c, g, 1] == 0 for g in range(1, 4) if S[c, g, 0] >= 0)
