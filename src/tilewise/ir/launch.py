"""The launch configuration a kernel declares with ``T.cta_id``/``T.thread_id``/...

Threads of a CTA are one-dimensional (``threadIdx.x``); every thread-kind variable is a
function of that linear id, defined once here and used by the code generator, the
simulator and the active-thread analysis alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScriptError
from .expr import Expr, binop

WARP = 32
WARPGROUP = 128
MAX_THREADS = 1024  # threads per CTA on every target
MAX_GRID = (2**31 - 1, 65535, 65535)  # CTAs per grid dimension x, y, z on every target

# kind -> (divisor, modulus) of the linear thread id; None means "not a thread kind"
_THREAD_MAP = {
    "thread_id": (1, None),
    "warp_id": (WARP, None),
    "lane_id": (1, WARP),
    "warpgroup_id": (WARPGROUP, None),
}
_THREADS_PER_UNIT = {"thread_id": 1, "warp_id": WARP, "warpgroup_id": WARPGROUP}
#: Launch kinds that are one value per CTA: its index in the grid, the index of its cluster
#: in the grid of clusters, its index inside the cluster (``%cluster_ctaid``).
CTA_KINDS = ("cta_id", "cluster_id", "cta_id_in_cluster")


def cta_value(kind: str, dim: int, cta: tuple, cluster: tuple) -> int:
    """The value of a CTA-kind variable for CTA ``cta`` (x, y, z) in clusters ``cluster``."""
    if kind == "cta_id":
        return cta[dim]
    if kind == "cluster_id":
        return cta[dim] // cluster[dim]
    return cta[dim] % cluster[dim]


def cluster_rank(cta: tuple, cluster: tuple) -> int:
    """``%cluster_ctarank``: the CTA's linear index inside its cluster (x fastest)."""
    x, y, z = (c % n for c, n in zip(cta, cluster))
    return x + cluster[0] * (y + cluster[1] * z)


def thread_value(kind: str, tid):
    """The value of a thread-kind variable for linear thread id ``tid`` (an int, a numpy
    array or an IR expression)."""
    div, mod = _THREAD_MAP[kind]
    if isinstance(tid, Expr):
        v = binop("//", tid, div) if div != 1 else tid
        return binop("%", v, mod) if mod else v
    v = tid // div if div != 1 else tid
    return v % mod if mod else v


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int]
    block: int
    cluster: tuple[int, int, int] = (1, 1, 1)  # CTAs per cluster (T.cta_id_in_cluster)

    @property
    def num_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1] * self.cluster[2]

    @classmethod
    def of(cls, func) -> LaunchConfig:
        grid, cluster = [1, 1, 1], [1, 1, 1]
        block_claims: list[tuple[int, object]] = []
        for b in func.launch:
            if b.kind == "cta_id":
                grid[b.dim] = b.extent
                if isinstance(b.extent, int) and b.extent > MAX_GRID[b.dim]:
                    raise ScriptError(f"T.cta_id declares {b.extent} CTAs in dimension "
                                      f"{'xyz'[b.dim]}; a grid has at most {MAX_GRID[b.dim]} "
                                      "there", b.span, hint="spread the CTAs over x, y and z "
                                      "(x takes up to 2^31 - 1)")
                continue
            if b.kind == "cta_id_in_cluster":
                cluster[b.dim] = b.extent
                continue
            if b.kind == "cluster_id":
                continue
            if b.kind == "lane_id":
                if b.extent != WARP:
                    raise ScriptError(
                        f"T.lane_id([{b.extent}]) declares {b.extent} lanes, a warp has {WARP}",
                        b.span, hint="write T.lane_id([32])")
                continue
            block_claims.append((b.extent * _THREADS_PER_UNIT[b.kind], b))
        if not block_claims:
            block = WARP if any(b.kind == "lane_id" for b in func.launch) else 1
            return cls(tuple(grid), block, tuple(cluster))
        block = block_claims[0][0]
        if block > MAX_THREADS:
            first = block_claims[0][1]
            raise ScriptError(f"T.{first.kind}([{first.extent}]) asks for {block} threads per "
                              f"CTA; a CTA has at most {MAX_THREADS}", first.span,
                              hint="use more CTAs (T.cta_id) and fewer threads each")
        for n, b in block_claims[1:]:
            if n != block:
                first = block_claims[0][1]
                raise ScriptError(
                    f"T.{b.kind}([{b.extent}]) implies {n} threads per CTA but "
                    f"T.{first.kind}([{first.extent}]) implies {block}",
                    b.span, hint="make the launch declarations agree "
                    "(threads = 32 x warps = 128 x warpgroups)")
        return cls(tuple(grid), block, tuple(cluster))
