"""Predicates shared by the variants. Each returns ``True`` or ``(False, reason)``."""

from __future__ import annotations

from fnmatch import fnmatch

import numpy as np

from ..ir.expr import BufferRegion
from ..target import FEATURES


def has_feature(ctx, feature: str, what: str):
    """The target has ``feature``; otherwise the reason names ``what`` (the instruction)
    and the targets that have it, worded by :data:`tilewise.target.FEATURES`."""
    if ctx.target.has(feature):
        return True
    return False, f"target {ctx.target} has no {what} (needs {FEATURES[feature].needs})"


def scope_in(ctx, scopes: tuple[str, ...]):
    if ctx.scope_kind in scopes:
        return True
    return False, (f"execution scope {ctx.scope_kind!r} is not supported (supported: "
                   f"{', '.join(scopes)})")


def all_active(ctx):
    """Every thread of every scope instance that reaches the call is active."""
    if ctx.scope_kind == "thread":
        return True
    if ctx.active.exact and ctx.active.count == 0:
        return False, "no thread reaches this call"
    return ctx.active.full_groups(ctx.thread_count)


def operands_are_regions(ctx):
    args = ctx.call.args
    if len(args) != 2 or not all(isinstance(a, BufferRegion) for a in args):
        return False, "operands must be two buffer regions (dst, src)"
    return True


def direction(ctx, pairs: tuple[tuple[str, str], ...]):
    """``(dst scope, src scope)`` is one of ``pairs`` (glob patterns like 'shared*')."""
    d, s = ctx.dst.buffer.scope, ctx.src.buffer.scope
    if any(fnmatch(d, pd) and fnmatch(s, ps) for pd, ps in pairs):
        return True
    allowed = ", ".join(f"{ps} -> {pd}" for pd, ps in pairs)
    return False, f"copies {s} -> {d}; this variant handles {allowed}"


def same_dtype(ctx):
    a, b = ctx.dst.buffer.dtype, ctx.src.buffer.dtype
    if a == b:
        return True
    return False, f"dst is {a} but src is {b}; this variant does not convert"


def same_size(ctx):
    if ctx.dst.size == ctx.src.size:
        return True
    return False, (f"dst has {ctx.dst.size} elements ({ctx.dst.shape}) but src has "
                   f"{ctx.src.size} ({ctx.src.shape})")


def whole_bytes(ctx):
    if ctx.dst.buffer.dtype.bits % 8 == 0:
        return True
    return False, f"{ctx.dst.buffer.dtype} elements are not whole bytes"


def first_thread_active(ctx):
    """The scope's first thread (the one that issues for the scope) reaches the call in
    every scope instance some thread of which reaches it."""
    if ctx.scope_kind == "thread" or not ctx.active.exact:
        return True
    groups = ctx.active.groups(ctx.thread_count)
    bad = np.nonzero(groups.any(axis=1) & ~groups[:, 0])[0]
    if len(bad):
        return False, (f"thread {int(bad[0]) * ctx.thread_count}, the first of its "
                       f"{ctx.scope_kind}, is not active")
    return True


def static_sizes(ctx):
    """Every operand buffer has compile-time sizes (variants that cannot guard a tail)."""
    for a in ctx.call.args:
        b = getattr(a, "buffer", None)
        if b is not None and b.symbolic:
            from ..ir.printer import script

            sym = next(s for s in b.shape + (b.strides or ()) if not isinstance(s, int))
            return False, (f"{b.name!r} has the symbolic size {script(sym)}; this variant "
                           "needs sizes known at compile time")
    return True


def option_needs_feature(ctx, option: str, feature: str, what: str):
    """Option ``option``, when given, needs target feature ``feature``."""
    if ctx.option(option) is None or ctx.target.has(feature):
        return True
    return False, f"{what} needs {FEATURES[feature].needs}; target is {ctx.target}"


def register_tiles(ctx, roles: tuple[str, ...] = ("dst", "src")):
    """The named operands are register tiles (local views whose layouts have thread
    axes)."""
    from .regtile import is_reg_tile

    for role in roles:
        r = getattr(ctx, role)
        if not is_reg_tile(r):
            return False, (f"{role} {r.buffer.name!r} is not a register tile (a local view "
                           "whose layout has thread axes); this variant works on registers")
    return True


def one_issuer(ctx, what: str):
    """At most one thread reaches a call whose instruction has single-thread semantics
    (``tcgen05.mma``, ``tcgen05.cp``): each thread that reaches it would issue its own."""
    n = ctx.active.count
    if n <= 1:
        return True
    how = (f"{n} threads reach this call" if ctx.active.exact else
           f"up to {n} threads may reach this call (condition {ctx.active.unknown[0]!r} is "
           "not known at compile time)")
    return False, (f"{how} and each would issue its own {what} (single-thread semantics); "
                   "guard it so that one thread issues it, e.g. `if T.ptx.elect_sync():` "
                   "inside one warp")
