"""The options of the tile primitives, each defined once with its type, and the check of
the values a call passes.

Options are **allow-lists**: a variant names, where it registers
(``register_dispatch(..., options=(MBAR, CACHE_HINT))``), the options it honours; a
primitive's option schema is the union of its variants' (plus ``dispatch=``, which every
primitive takes: :func:`tilewise.tile.registry.options_of`); and a variant is declined,
with a reason, for a given option it does not list -- never silently ignores it. So an
option is defined here once, named by the variants that implement it, and nowhere denied.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScriptError, looks_bool


@dataclass(frozen=True)
class Option:
    name: str
    kind: str  # str | int | number | bool | expr | ptr | axes | operand
    doc: str
    choices: tuple = ()

    def check(self, prim: str, v, span=None):
        """The value ``v`` of this option in a call of ``prim``, checked against the kind
        and the choices (a ScriptError at the user's line)."""
        k = self.name
        if self.kind == "str" and not isinstance(v, str):
            raise ScriptError(f"option {k}= of {prim} must be a string", span)
        if self.kind == "int" and (not isinstance(v, int) or isinstance(v, bool)):
            raise ScriptError(f"option {k}= of {prim} must be a compile-time int", span)
        if self.kind == "number" and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise ScriptError(f"option {k}= of {prim} must be a compile-time number (such as "
                              f"0.0 or float(\"-inf\")), got {type(v).__name__}", span)
        if self.kind == "bool" and not isinstance(v, bool):
            raise ScriptError(f"option {k}= of {prim} must be a compile-time True or False, "
                              f"got {type(v).__name__}" + (f" {v!r}" if isinstance(v, str)
                                                           else ""), span,
                              hint=_bool_hint(k, v))
        if self.kind in ("expr", "ptr", "operand") and isinstance(v, str):
            raise ScriptError(f"option {k}= of {prim} takes a value, not the string {v!r}",
                              span, hint=_bool_hint(k, v) or f"pass {k}= an expression")
        if self.kind == "axes" and not (isinstance(v, int) and not isinstance(v, bool) or (
                isinstance(v, (tuple, list)) and all(isinstance(a, int) for a in v))):
            raise ScriptError(f"option {k}= of {prim} must be an axis or a tuple of axes "
                              f"(compile-time ints), got {v!r}", span,
                              hint="e.g. axes=-1 or axes=(0, 1)")
        if self.choices and v not in self.choices:
            raise ScriptError(f"option {k}={v!r} of {prim} is not one of "
                              f"{', '.join(map(repr, self.choices))}", span)
        return tuple(v) if isinstance(v, list) else v


def _bool_hint(k: str, v) -> str | None:
    """A hint for a string that reads as a boolean ("false" is true to Python)."""
    b = looks_bool(v)
    return None if b is None else (f"pass {k}={b} (a string is not a bool: to Python {v!r} "
                                   f"is {bool(v)})")


DISPATCH = Option("dispatch", "str", "force one variant by name")

# ---- copy, copy_async
FILL = Option("fill", "number", "a partial tile (a source region past the end of its buffer): "
              "what the elements outside read as (default 0; float(\"-inf\") before a max)")
MBAR = Option("mbar", "ptr", "complete on this mbarrier (TMA, bulk, dsmem); cp.async cannot")
CACHE_HINT = Option("cache_hint", "str", "L2 cache hint", ("evict_first", "evict_last",
                                                            "normal"))
PREFETCH_SIZE = Option("prefetch_size", "int", "L2 prefetch size in bytes", (64, 128, 256))
PREDICATE = Option("predicate", "expr", "copy only where this is true (zero-fill elsewhere)")
CTA_GROUP = Option("cta_group", "int", "tcgen05 CTA group", (1, 2))
CTA_MASK = Option("cta_mask", "expr", "TMA multicast: the CTAs of the cluster (a 16-bit mask "
                  "of ranks) whose shared memory receives the tile")
OOB = Option("oob", "str", "TMA: what elements outside the array read as", ("zero", "nan"))
L2_PROMOTION = Option("l2_promotion", "int", "TMA: L2 promotion of the tensor map, in bytes",
                      (0, 64, 128, 256))
PREFETCH_TENSORMAP = Option("prefetch_tensormap", "bool", "TMA: prefetch the tensor map first")
USE_TMA_REDUCE = Option("use_tma_reduce", "str", "TMA store: reduce into global memory "
                        "instead of overwriting it", ("add", "min", "max"))
REMOTE_CTA_ID = Option("remote_cta_id", "expr", "dsmem: the CTA rank in the cluster whose "
                       "shared memory receives the tile")

# ---- gemm, gemm_async
ACCUM = Option("accum", "expr", "add into C (True, or a run-time bool) instead of "
               "overwriting it (False, the default)")
TRANS_A = Option("transA", "bool", "A is given as its transpose, a (K, M) region")
TRANS_B = Option("transB", "bool", "B is given as its transpose, a (N, K) region: "
                 "C (+)= A @ B.T (a K-major B, as fp8 wgmma needs)")

# ---- elementwise math, reductions
PRECISE = Option("precise", "bool", "compute through libdevice instead of the approximate "
                 "instructions (ex2/lg2/rsqrt.approx.f32)")
FTZ = Option("ftz", "bool", "exp / exp2: flush subnormal inputs and results to zero "
             "(ex2.approx.ftz.f32, one instruction; the form without it adds three)")
SCALE = Option("scale", "operand", "dst = f(src * scale + bias): a number, a run-time scalar "
               "or a region that broadcasts")
BIAS = Option("bias", "operand", "see scale=")
AXES = Option("axes", "axes", "the axes to reduce (default -1, the last)")
FOLD = Option("accum", "bool", "fold the old dst into the result")
