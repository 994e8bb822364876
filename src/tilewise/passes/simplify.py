"""Simplify index arithmetic so that offsets print readably (``f * 1024 + tid * 8``).

Integer ``+ - *`` trees are rewritten to a canonical affine sum (terms by descending
coefficient, constant last). ``//`` and ``%`` by a positive constant ``d`` use exact
identities of floor division, so nothing here depends on the sign of a value:

* ``(d*Q + R) // d == Q + R // d`` and ``(d*Q + R) % d == R % d``;
* ``R // d == (R/g) // (d/g)`` and ``R % d == g * ((R/g) % (d/g))`` when ``g`` divides
  every coefficient of ``R``, its constant and ``d``;
* ``R // d == 0`` and ``R % d == R`` when ``0 <= R < d`` (ranges of loop and thread
  variables are known);
* ``(x // a) // b == x // (a*b)`` and ``(x % a) % b == x % b`` when ``b`` divides ``a``.
"""

from __future__ import annotations

import math

from ..ir.expr import BinOp, Expr, IntImm, Var, as_int, binop, const
from ..ir.launch import WARP, WARPGROUP
from ..ir.stmt import For, PrimFunc
from ..ir.visitor import Mutator

Linear = tuple[dict, int]  # ({key: (atom, coeff)}, constant)


def _linear(e: Expr) -> Linear:
    c = as_int(e)
    if c is not None:
        return {}, c
    if isinstance(e, BinOp) and e.op in ("+", "-"):
        (ta, ca), (tb, cb) = _linear(e.a), _linear(e.b)
        sign = 1 if e.op == "+" else -1
        out = dict(ta)
        for k, (atom, v) in tb.items():
            old = out.get(k, (atom, 0))[1]
            out[k] = (atom, old + sign * v)
        return {k: t for k, t in out.items() if t[1] != 0}, ca + sign * cb
    if isinstance(e, BinOp) and e.op == "*":
        ka, kb = as_int(e.a), as_int(e.b)
        if ka is not None or kb is not None:
            k, other = (ka, e.b) if ka is not None else (kb, e.a)
            t, c0 = _linear(other)
            return {key: (a, v * k) for key, (a, v) in t.items() if v * k}, c0 * k
    return {id(e): (e, 1)}, 0


def _divmod_of(atom) -> tuple[str, Expr, int] | None:
    if isinstance(atom, BinOp) and atom.op in ("//", "%") and isinstance(atom.a, Var):
        k = as_int(atom.b)
        if k is not None and k > 0:
            return atom.op, atom.a, k
    return None


def _merge_divmod(terms: dict) -> dict:
    """``(x // k) * (a*k) + (x % k) * a == x * a`` (floor division identity)."""
    out = dict(terms)
    for key, (atom, v) in terms.items():
        dm = _divmod_of(atom)
        if dm is None or dm[0] != "//" or key not in out:
            continue
        _, x, k = dm
        for key2, (atom2, v2) in list(out.items()):
            dm2 = _divmod_of(atom2)
            if dm2 and dm2[0] == "%" and dm2[1] is x and dm2[2] == k and v == v2 * k:
                del out[key], out[key2]
                old = out.get(id(x), (x, 0))[1]
                out[id(x)] = (x, old + v2)
                break
    return {k: t for k, t in out.items() if t[1] != 0}


def _build(lin: Linear, like) -> Expr:
    terms, c0 = lin
    terms = _merge_divmod(terms)
    items = sorted(terms.values(), key=lambda t: -abs(t[1]))
    out: Expr | None = None
    for atom, v in items:
        piece = atom if abs(v) == 1 else binop("*", atom, abs(v))
        if out is None:
            out = piece if v > 0 else binop("-", 0, piece)
        else:
            out = binop("+" if v > 0 else "-", out, piece)
    if out is None:
        return IntImm(c0, like)
    if c0:
        out = binop("+" if c0 > 0 else "-", out, abs(c0))
    return out


class _Simplify(Mutator):
    def __init__(self, ranges: dict[int, tuple[int, int]]):
        self.ranges = ranges

    def bound(self, e: Expr) -> tuple[int, int] | None:
        c = as_int(e)
        if c is not None:
            return c, c
        if isinstance(e, Var):
            return self.ranges.get(id(e))
        if isinstance(e, BinOp) and as_int(e.b) is not None and as_int(e.b) > 0:
            d = as_int(e.b)
            if e.op == "%":
                return 0, d - 1
            inner = self.bound(e.a)
            if e.op == "//" and inner:
                return inner[0] // d, inner[1] // d
        if isinstance(e, BinOp) and e.op in ("min", "max"):  # T.min / T.max
            a, b = self.bound(e.a), self.bound(e.b)
            if a is None or b is None:
                return None
            pick = min if e.op == "min" else max
            return pick(a[0], b[0]), pick(a[1], b[1])
        if isinstance(e, BinOp) and e.op in ("+", "-", "*"):
            terms, c0 = _linear(e)
            if len(terms) == 1 and next(iter(terms.values()))[0] is e:
                return None
            lo = hi = c0
            for atom, v in terms.values():
                b = self.bound(atom)
                if b is None:
                    return None
                lo, hi = lo + min(b[0] * v, b[1] * v), hi + max(b[0] * v, b[1] * v)
            return lo, hi
        return None

    def visit_For(self, s: For):
        lo, n = as_int(s.start), as_int(s.extent)
        if lo is not None and n is not None and n > 0:
            self.ranges[id(s.var)] = (lo, lo + n - 1)
        return self.generic_visit(s)

    def visit_BinOp(self, e: BinOp):
        new = self.generic_visit(e)
        if not isinstance(new, BinOp) or not new.dtype.is_int or new.dtype.name == "bool":
            return new
        d = as_int(new.b)
        if new.op in ("//", "%") and d is not None and d > 0:
            return self.divmod(new.op, new.a, d, new)
        if new.op in ("+", "-", "*"):
            return _build(_linear(new), new.dtype)
        return new

    def divmod(self, op: str, a: Expr, d: int, orig: BinOp) -> Expr:
        nested = self.nested(op, a, d)
        if nested is not None:
            return nested
        terms, c0 = _linear(a)
        q_terms = {k: (t, v // d) for k, (t, v) in terms.items() if v % d == 0}
        r_terms = {k: t for k, t in terms.items() if k not in q_terms}
        rest = self.rest(op, (r_terms, c0 % d), d, orig)
        if op == "%":
            return rest
        return _build((q_terms, c0 // d), orig.dtype) + rest

    def rest(self, op: str, lin: Linear, d: int, orig: BinOp) -> Expr:
        terms, c0 = lin
        g = math.gcd(d, c0, *(v for _, v in terms.values()))
        r = _build(({k: (t, v // g) for k, (t, v) in terms.items()}, c0 // g), orig.dtype)
        dd = d // g
        b = self.bound(r)
        if b is not None and 0 <= b[0] and b[1] < dd:
            return const(0, orig.dtype) if op == "//" else r * g
        if op == "//":
            return binop("//", r, dd) if dd != 1 else r
        return binop("%", r, dd) * g if dd != 1 else const(0, orig.dtype)

    def nested(self, op: str, a: Expr, d: int) -> Expr | None:
        if not isinstance(a, BinOp) or a.op != op or as_int(a.b) is None or as_int(a.b) <= 0:
            return None
        k = as_int(a.b)
        if op == "//":
            return self.visit(binop("//", a.a, k * d))
        if k % d == 0:
            return self.visit(binop("%", a.a, d))
        return None


def launch_ranges(func: PrimFunc) -> dict[int, tuple[int, int]]:
    block = func.launch_config.block
    per = {"thread_id": block, "warp_id": max(block // WARP, 1), "lane_id": WARP,
           "warpgroup_id": max(block // WARPGROUP, 1)}
    out = {}
    for b in func.launch:
        if b.kind == "cluster_id":
            continue  # grid / cluster: bounded, but by a quotient nothing here needs
        n = b.extent if b.kind in ("cta_id", "cta_id_in_cluster") else per[b.kind]
        if isinstance(n, int):  # a grid of symbolic size bounds nothing known here
            out[id(b.var)] = (0, n - 1)
    return out


def bound(e: Expr, ranges: dict[int, tuple[int, int]]) -> tuple[int, int] | None:
    """Inclusive bounds of the integer expression ``e`` given bounds of its variables
    (``ranges``: id(Var) -> (lo, hi)); None when some part is unbounded."""
    return _Simplify(ranges).bound(e)


def simplify_expr(e: Expr, ranges: dict[int, tuple[int, int]] | None = None) -> Expr:
    """Simplify one expression (``ranges``: id(Var) -> inclusive bounds)."""
    return _Simplify(dict(ranges or {})).visit(e)


def simplify(func: PrimFunc) -> PrimFunc:
    """Simplify every integer expression of ``func``."""
    return func.with_body(_Simplify(launch_ranges(func)).visit(func.body))
