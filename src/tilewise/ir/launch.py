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

    @property
    def num_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @classmethod
    def of(cls, func) -> LaunchConfig:
        grid = [1, 1, 1]
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
            if b.kind == "lane_id":
                if b.extent != WARP:
                    raise ScriptError(
                        f"T.lane_id([{b.extent}]) declares {b.extent} lanes, a warp has {WARP}",
                        b.span, hint="write T.lane_id([32])")
                continue
            block_claims.append((b.extent * _THREADS_PER_UNIT[b.kind], b))
        if not block_claims:
            block = WARP if any(b.kind == "lane_id" for b in func.launch) else 1
            return cls(tuple(grid), block)
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
        return cls(tuple(grid), block)
