"""Tile primitives and their typed option schemas.

A tile primitive is called as ``Tx.<scope>.<op>(dst, src, **options)``. Each primitive
declares the options it accepts; a misspelt or foreign option is a ScriptError at the
user's line naming the options that exist (never silently ignored).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScriptError, did_you_mean

SCOPE_NAMES = {"thread": "thread", "warp": "warp", "wg": "warpgroup", "warpgroup": "warpgroup",
               "cta": "cta", "cluster": "cluster"}


@dataclass(frozen=True)
class Option:
    name: str
    kind: str  # str | int | bool | expr | ptr
    doc: str
    choices: tuple = ()


@dataclass(frozen=True)
class Primitive:
    name: str
    operands: tuple[str, ...]
    options: tuple[Option, ...]
    doc: str

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def check_options(self, given: dict, span=None) -> tuple[tuple[str, object], ...]:
        out = []
        for k, v in given.items():
            opt = self.option(k)
            if v is None and opt is not None:
                continue  # an option passed as None is an option not given
            if opt is None:
                raise ScriptError(
                    f"{self.name} has no option {k!r}", span,
                    hint=did_you_mean(k, [o.name for o in self.options]) +
                    f" ({self.name} options: {', '.join(o.name for o in self.options)})")
            if opt.kind == "str" and not isinstance(v, str):
                raise ScriptError(f"option {k}= of {self.name} must be a string", span)
            if opt.kind == "bool" and not isinstance(v, bool):
                raise ScriptError(f"option {k}= of {self.name} must be True or False", span)
            if opt.kind == "int" and (not isinstance(v, int) or isinstance(v, bool)):
                raise ScriptError(f"option {k}= of {self.name} must be a compile-time int", span)
            if opt.choices and v not in opt.choices:
                raise ScriptError(f"option {k}={v!r} of {self.name} is not one of "
                                  f"{', '.join(map(repr, opt.choices))}", span)
            out.append((k, v))
        return tuple(out)


_DISPATCH = Option("dispatch", "str", "force one variant by name")
_COMMON = (_DISPATCH,)

PRIMITIVES: dict[str, Primitive] = {
    p.name: p
    for p in [
        Primitive("copy", ("dst", "src"), _COMMON,
                  "synchronous copy of a tile between any two memories"),
        Primitive("copy_async", ("dst", "src"), _COMMON + (
            Option("mbar", "ptr", "complete on this mbarrier (TMA); cp.async cannot"),
            Option("cache_hint", "str", "L2 cache hint", ("evict_first", "evict_last", "normal")),
            Option("prefetch_size", "int", "L2 prefetch size in bytes", (64, 128, 256)),
            Option("predicate", "expr", "copy only where this is true (zero-fill elsewhere)"),
            Option("cta_group", "int", "tcgen05 CTA group", (1, 2)),
            Option("cta_mask", "expr", "TMA multicast: the CTAs of the cluster (a 16-bit mask "
                   "of ranks) whose shared memory receives the tile"),
            Option("oob", "str", "TMA: what elements outside the array read as",
                   ("zero", "nan")),
            Option("l2_promotion", "int", "TMA: L2 promotion of the tensor map, in bytes",
                   (0, 64, 128, 256)),
            Option("prefetch_tensormap", "bool", "TMA: prefetch the tensor map first"),
            Option("use_tma_reduce", "str", "TMA store: reduce into global memory instead of "
                   "overwriting it", ("add", "min", "max")),
            Option("remote_cta_id", "expr", "dsmem: the CTA rank in the cluster whose shared "
                   "memory receives the tile"),
        ), "asynchronous copy; completion (commit/wait/barrier) is the caller's"),
        Primitive("gemm_async", ("C", "A", "B"), _COMMON + (
            Option("accum", "expr", "add into C (True, or a run-time bool) instead of "
                   "overwriting it (False, the default)"),
            Option("cta_group", "int", "tcgen05 CTA group", (1, 2)),
        ), "asynchronous C (+)= A @ B on the tensor cores (wgmma, tcgen05.mma); the fences, "
           "commits and waits are the caller's"),
        Primitive("gemm", ("C", "A", "B"), _COMMON + (
            Option("accum", "expr", "add into C (True, or a run-time bool) instead of "
                   "overwriting it (False, the default)"),
        ), "synchronous C (+)= A @ B of register or shared tiles (mma.sync)"),
    ]
}


def lookup(name: str, span=None) -> Primitive:
    p = PRIMITIVES.get(name)
    if p is None:
        raise ScriptError(f"Tx.{name} is not a tile primitive", span,
                          hint=did_you_mean(name, PRIMITIVES))
    return p
