"""Small analyses of index expressions, shared by the parser and the dispatcher: affine
forms, constant differences, the largest known divisor of a value."""

from __future__ import annotations

import contextlib
import contextvars

from .expr import BinOp, Cast, IntImm, Var, as_int

_LET_VALUES: contextvars.ContextVar = contextvars.ContextVar("let_values", default=None)


@contextlib.contextmanager
def let_values(values: dict):
    """Within the block, :func:`known_multiple` sees through the locals of ``values`` (id
    of a Var -> the value it was defined with, once: a local never reassigned): the
    dispatcher sets it around each tile call, so `col = nt * 128 + q // 2 * 8` keeps its
    divisor 8 whatever `nt` is computed from (a symbolic size, a load). Only facts: the
    code keeps the local."""
    token = _LET_VALUES.set(values)
    try:
        yield
    finally:
        _LET_VALUES.reset(token)


def affine(e, atoms: bool = False) -> dict | None:
    """``e`` as {Var or 1: coefficient}, or None when it is not affine in its Vars. With
    ``atoms``, a sub-expression that is not affine (``t // 16``) becomes a term of its own,
    keyed by its text, so that ``(t // 16 * 8 + 8) - t // 16 * 8`` is still seen as 8."""
    if isinstance(e, bool):
        return None
    if isinstance(e, int):
        return {1: e}
    if isinstance(e, IntImm):
        return {1: e.value}
    if isinstance(e, Var):
        return {e: 1}
    if isinstance(e, Cast) and e.dtype.is_int and e.value.dtype.is_int:
        return affine(e.value, atoms)
    if isinstance(e, BinOp) and e.op in ("+", "-"):
        a, b = affine(e.a, atoms), affine(e.b, atoms)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "+" else -1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + sign * v
        return {k: v for k, v in out.items() if v != 0 or k == 1}
    if isinstance(e, BinOp) and e.op == "*":
        ca, cb = as_int(e.a), as_int(e.b)
        if ca is None and cb is None:
            return _atom(e) if atoms else None
        k, other = (ca, e.b) if ca is not None else (cb, e.a)
        f = affine(other, atoms)
        return None if f is None else {v: c * k for v, c in f.items()}
    return _atom(e) if atoms else None


def _atom(e) -> dict:
    return {("atom", _key(e)): 1}


def _key(e):
    """A hashable structural key (Vars by identity, so two Vars named alike differ)."""
    if isinstance(e, Var):
        return ("var", id(e))
    if isinstance(e, IntImm):
        return ("int", e.value)
    if isinstance(e, BinOp):
        return ("bin", e.op, _key(e.a), _key(e.b))
    from .printer import script

    return ("expr", type(e).__name__, script(e))


def const_difference(a, b) -> int | None:
    """``a - b`` when it is a compile-time constant (e.g. ``(i*8 + 8) - i*8``)."""
    ia, ib = as_int(a), as_int(b)
    if ia is not None and ib is not None:
        return ia - ib
    fa, fb = affine(a, atoms=True), affine(b, atoms=True)
    if fa is None or fb is None:
        return None
    keys = set(fa) | set(fb)
    diff = {k: fa.get(k, 0) - fb.get(k, 0) for k in keys}
    if any(v != 0 for k, v in diff.items() if k != 1):
        return None
    return diff.get(1, 0)



def known_multiple(e) -> int:
    """The largest integer known to divide every value of ``e`` (0 when ``e`` is 0).

    Sees through what affine forms cannot: ``(t // 16) * 1024 + (t % 16) * 8`` is a
    multiple of 8 whatever ``t`` is. Used for the alignment of computed tile origins."""
    import math

    from .expr import UnaryOp

    if isinstance(e, bool):
        return 1
    if isinstance(e, int):
        return abs(e)
    if isinstance(e, IntImm):
        return abs(e.value)
    if isinstance(e, Cast) and e.dtype.is_int and e.value.dtype.is_int:
        return known_multiple(e.value)
    if isinstance(e, UnaryOp) and e.op == "-":
        return known_multiple(e.a)
    if isinstance(e, Var):
        lets = _LET_VALUES.get()
        return known_multiple(lets[id(e)]) if lets and id(e) in lets else 1
    if not isinstance(e, BinOp):
        return 1
    ka, kb = known_multiple(e.a), known_multiple(e.b)
    cb = as_int(e.b)
    if e.op in ("+", "-"):
        return math.gcd(ka, kb)
    if e.op == "*":
        return ka * kb
    if e.op == "<<" and cb is not None and cb >= 0:
        return ka << cb
    if e.op == "//" and cb is not None and cb > 0:
        return ka // cb if ka % cb == 0 else 1
    if e.op == "%" and cb is not None and cb > 0:
        return 0 if ka % cb == 0 else math.gcd(ka, cb)  # (x * 128) % 64 is always 0
    if e.op in ("^", "|"):  # bits below both operands' known low zero bits stay zero
        return min(_pow2(ka), _pow2(kb))
    if e.op == "&":
        return max(_pow2(ka), _pow2(kb))
    return 1


def _pow2(k: int) -> int:
    """The largest power of two dividing ``k`` (a huge one for 0: every bit is zero)."""
    return k & -k if k else 1 << 62
