"""Kernel options, checked before a single LLVM instruction is built.

LLVM aborts the whole Python process when it meets a malformed attribute, so every
option is checked here first and reported as a :class:`CompileError`. (An intrinsic the
target cannot select — LLVM's "Cannot select: intrinsic ..." — is ruled out earlier: the
pipeline's target check, :mod:`tilewise.passes.check_targets`.)
"""

from __future__ import annotations

from ..errors import CompileError, did_you_mean

#: Kernel options ``tw.compile`` accepts, with what each must be.
OPTIONS = {
    "maxntid": "threads per CTA upper bound, an int or a tuple of up to 3 ints",
    "minctasm": "minimum CTAs per SM, an int",
    "maxnreg": "maximum registers per thread, an int",
    "cluster_dim": "CTAs per cluster, an int or a tuple of up to 3 ints (sm_90+)",
    "ftz": "flush float32 denormals to zero in libdevice math (bool, default False)",
}


def _dims(name: str, value, most: int) -> tuple[int, ...]:
    dims = (value,) if isinstance(value, int) else tuple(value) if isinstance(
        value, (tuple, list)) else None
    if (not dims or len(dims) > most
            or any(not isinstance(d, int) or isinstance(d, bool) or d <= 0 for d in dims)):
        raise CompileError(f"option {name}={value!r} is invalid: expected {OPTIONS[name]}")
    return dims


def check_options(options: dict, target) -> dict:
    """Validate ``tw.compile`` keyword options; returns them normalised (tuples of ints)."""
    out = {}
    for k, v in options.items():
        if k not in OPTIONS:
            raise CompileError(f"tw.compile has no option {k!r}", hint=did_you_mean(k, OPTIONS))
        if k == "ftz":
            out[k] = bool(v)
        else:
            out[k] = _dims(k, v, 3 if k in ("maxntid", "cluster_dim") else 1)
    if "cluster_dim" in out and not target.has("cluster"):
        raise CompileError(f"cluster_dim needs thread-block clusters (sm_90 or newer); target is "
                           f"{target}", hint="drop cluster_dim or compile for sm_90a or newer")
    return out
