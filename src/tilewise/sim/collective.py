"""Checks of collective instructions (``.sync.aligned``): which groups of threads execute
them, and whether an operand is the same across a warp."""

from __future__ import annotations

import numpy as np

from ..ir.launch import WARP
from .values import fit


def whole_groups(ctx, span, what: str, size: int = WARP, unit: str = "warp") -> np.ndarray:
    """The ids of the active groups of ``size`` threads (warps by default), each of which
    must be fully active; a partial group is a hazard."""
    act = ctx.active()
    first = act[::size]
    if (len(act) % size == 0 and not (first % size).any()
            and (act[size - 1::size] == first + size - 1).all()):  # sorted: whole groups
        return first // size
    groups, counts = np.unique(act // size, return_counts=True)
    if (counts != size).any():
        k = int(np.argmax(counts != size))
        g = int(groups[k])
        ctx.hazard(f"{what} is .sync.aligned: all {size} threads of {unit} {g} must execute "
                   f"it, but only {int(counts[k])} do", span,
                   f"execute it from a whole {unit} (if {unit}_id == 0: ...)", tid=g * size)
    return groups


def warp_uniform(ctx, span, values, what: str) -> dict[int, int]:
    """One value per active warp; a warp whose threads disagree is a hazard."""
    act = ctx.active()
    v = fit(values, act.shape, np.int64)
    out = {}
    for w in np.unique(act // WARP).tolist():
        vw = v[act // WARP == w]
        if (vw != vw[0]).any():
            ctx.hazard(f"{what} operand differs between the threads of warp {w}", span,
                       "pass the same value in every thread of the warp", tid=w * WARP)
        out[w] = int(vw[0])
    return out
