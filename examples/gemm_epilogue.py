"""The Hopper GEMM's epilogue written with the tile compute primitives, on the register
fragment ``wgmma.mma_async .m64nNk16`` leaves its float32 accumulator in
(``tilewise.layout.wgmma_accumulator(N)``: per warpgroup 64 rows x N columns, thread ``t``
holding rows ``16 (t // 32) + (t % 32) // 4 + {0, 8}`` and columns ``8 j + 2 (t % 4) +
{0, 1}`` of each 8-column group ``j``).

The GEMM's kernel ends with (``acc`` its accumulator view, ``out`` a bfloat16 view of the
same layout, ``Bias`` the bias vector in global memory)::

    Tx.wg.add(acc, acc, Bias[n0:n0 + N])   # a row vector broadcast over the 64 rows
    Tx.wg.silu(acc, acc)                   # y / (1 + e^-y), ex2.approx.f32
    Tx.wg.cast(out, acc)                   # cvt.rn.bf16x2.f32 on each column pair
    Tx.wg.copy(C[m0:m0 + 64, n0:n0 + N], out)

Every step is per thread and per register (no data moves between threads), so it costs
a few instructions per accumulator element and no memory traffic beyond the bias row.

:func:`make_epilogue` builds a stand-alone kernel around it: the "accumulator" is read from
a float32 array (where the GEMM would run wgmma), so the epilogue can be checked in the
simulator and timed on its own against the plain cast epilogue
(``benchmarks/bench_epilogue.py``).
"""

import numpy as np

from tilewise import T, Tx, config_error
from tilewise.layout import wgmma_accumulator

TARGET = "sm_90a"


def make_epilogue(M: int, N: int, dtype: str = "bfloat16", bias: bool = True,
                  activation: str | None = "silu", warpgroups: int = 2):
    """A kernel ``k(ACC, BIAS, C)``: ``C = act(ACC + BIAS)`` cast to ``dtype``, ACC ``M x N``
    float32 (the stand-in accumulator), BIAS ``N`` float32, C ``M x N``; each warpgroup
    handles 64 rows through the wgmma accumulator layout. ``bias=False`` and
    ``activation=None`` give the plain cast epilogue."""
    if activation not in (None, "silu"):
        raise config_error(f"activation {activation!r}: silu or None")
    rows = 64 * warpgroups
    if M % rows:
        raise config_error(f"M={M} is not a multiple of {rows} (64 rows per warpgroup)")
    frag = wgmma_accumulator(N)
    regs = N // 2  # 64 * N elements over 128 threads

    @T.prim_func
    def epilogue(ACC_ptr: T.handle, B_ptr: T.handle, C_ptr: T.handle):
        ACC = T.match_buffer(ACC_ptr, (M, N), "float32")
        BIAS = T.match_buffer(B_ptr, (N,), "float32")
        C = T.match_buffer(C_ptr, (M, N), dtype)
        T.device_entry()
        bx = T.cta_id([M // rows])
        wg = T.warpgroup_id([warpgroups])
        ar = T.alloc_local((regs,), "float32")
        acc = ar.view(64, N, layout=frag)
        orr = T.alloc_local((regs,), dtype)
        out = orr.view(64, N, layout=frag)
        m0 = bx * rows + wg * 64
        Tx.wg.copy(acc, ACC[m0:m0 + 64, 0:N])  # the GEMM: wgmma into acc
        if bias:
            Tx.wg.add(acc, acc, BIAS[0:N])
        if activation == "silu":
            Tx.wg.silu(acc, acc)
        Tx.wg.cast(out, acc)
        Tx.wg.copy(C[m0:m0 + 64, 0:N], out)

    return epilogue


SHAPE = (128, 64)
epilogue = make_epilogue(*SHAPE, "bfloat16")
RTOL = 2.0 ** -7  # bfloat16 rounding (2^-8) plus the float32 and ex2.approx steps
ATOL = 2.0 ** -20


def inputs(rng, shape=SHAPE, dtype="bfloat16"):
    import ml_dtypes

    out = np.zeros(shape, ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    return [(rng.standard_normal(shape) * 4).astype(np.float32),
            rng.standard_normal(shape[-1]).astype(np.float32), out]


def reference(acc, b, c):
    y = acc.astype(np.float64) + b
    return [acc, b, (y / (1 + np.exp(-y))).astype(c.dtype)]
