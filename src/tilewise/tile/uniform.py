"""Which scalars are *uniform* — one value for every thread of a CTA — and which loops may
run with only some of their threads.

A value is uniform when it is built from uniform inputs (CTA ids, scalar parameters and
sizes, constants, uniform locals, and loads at uniform indices from a global buffer the
kernel never writes: an expert's row count, a group index) by arithmetic; any other loaded
value or a thread id is not. A local is uniform when every assignment to it stores a
uniform value under uniform control (no enclosing ``if``/``while`` condition or loop bound
that differs between threads, no loop left early by some threads only). Loop-carried locals
make this a fixpoint: start from "every local is uniform" and drop locals until nothing
changes.

A loop is *divergent* when some thread may leave it or skip part of it while others go on:
a ``break``/``continue`` under a condition that is not uniform, or a ``while`` condition or
``for`` bound that is not uniform. Tile calls inside such a loop may run with only some of
the threads (the dispatch pass treats their active set as unknown).

**Uniform inside a branch.** Warp-specialised kernels split the CTA by a condition on the
thread id alone (``if wg == 2: produce() else: consume()``): a *static* partition, the same
threads on the same side every time. A local assigned only inside such a branch, from
values uniform there, is uniform among the threads of that side (a consumer's block
counter, its loop variable): a condition on it inside the same side splits none of them.
``analyse`` returns these locals with the branch sides (``(id(if), side)``) they are uniform
in; the dispatch pass treats them as uniform where every such side encloses the use. A
loop whose bounds are uniform that way is not divergent either.
"""

from __future__ import annotations

from ..ir.expr import (AddressOf, BinOp, BufferLoad, BufferRegion, Call, Cast, FloatImm,
                       IntImm, Select, UnaryOp, Var)
from ..ir.launch import CTA_KINDS
from ..ir.stmt import Assign, Buffer, BufferStore, For, IfThenElse, LetStmt, While
from ..ir.visitor import Visitor, walk


class _Sites(Visitor):
    """Every assignment site with the conditions that guard it, and every loop's jumps."""

    def __init__(self):
        self.sites: list[tuple[Var, object, tuple]] = []  # (var, value, guarding exprs)
        self.guards: list = []
        self.loop_jumps: dict[int, list] = {}  # id(loop) -> guards of its break/continue
        self.loops: list = []
        self.loop_guards: dict[int, list] = {}  # id(loop) -> its own bound/condition exprs
        self.loop_outer: dict[int, tuple] = {}  # id(loop) -> the guards around it

    def visit_LetStmt(self, s: LetStmt):
        self.sites.append((s.var, s.value, tuple(self.guards)))
        self.visit(s.value)

    def visit_Assign(self, s: Assign):
        self.sites.append((s.var, s.value, tuple(self.guards)))

    def visit_IfThenElse(self, s: IfThenElse):
        for side, body in ((True, s.then_body), (False, s.else_body)):
            self.guards.append(_Branch(s, side))
            self.visit(body)
            self.guards.pop()

    def _loop(self, s, exprs, body):
        self.loop_guards[id(s)] = list(exprs)
        self.loop_outer[id(s)] = tuple(self.guards)
        self.loop_jumps[id(s)] = []
        self.loops.append(s)
        self.guards.append(_LoopGuard(s))
        self.visit(body)
        self.guards.pop()
        self.loops.pop()

    def visit_For(self, s: For):
        self.sites.append((s.var, BinOp("+", s.start, s.extent), tuple(self.guards)))
        self._loop(s, (s.start, s.extent), s.body)

    def visit_While(self, s: While):
        self._loop(s, (s.cond,), s.body)

    def visit_Break(self, s):
        if self.loops:
            self.loop_jumps[id(self.loops[-1])].append(tuple(self.guards))

    visit_Continue = visit_Break


class _LoopGuard:
    """A guard meaning "inside loop L" (uniform when L is not divergent)."""

    def __init__(self, loop):
        self.loop = loop


class _Branch:
    """A guard meaning "on side ``side`` of if-statement ``node``"."""

    def __init__(self, node, side: bool):
        self.cond, self.key = node.cond, (id(node), side)


def read_only(func) -> frozenset[int]:
    """ids of the kernel's global buffers it never writes: never stored to, never a region
    or an address operand of a call (a tile primitive or an instruction may write those)."""
    touched = set()

    def look(n):
        if isinstance(n, (BufferStore, BufferRegion, AddressOf)):
            touched.add(id(n.buffer))
    walk(func.body, look)
    return frozenset(id(b) for _, b in func.buffer_map
                     if b.scope == "global" and id(b) not in touched)


def analyse(func) -> tuple[set[int], set[int], dict[int, frozenset]]:
    """``(uniform local ids, divergent loop ids, {local id: branch sides})`` of a kernel
    (launch CTA ids, scalar parameters and symbolic sizes are uniform inputs; so are loads
    from :func:`read_only` buffers at uniform indices); the third holds the locals uniform
    only inside static thread branches (the module docstring)."""
    sites = _Sites()
    sites.visit(func.body)
    readonly = read_only(func)
    uniform = {id(b.var) for b in func.launch if b.kind in CTA_KINDS}
    uniform |= {id(p) for p in func.params}
    assigned = {id(v) for v, _, _ in sites.sites}
    uniform |= assigned
    while True:
        divergent = {key for key in sites.loop_guards
                     if not _loop_uniform(key, sites, uniform, readonly)}
        drop = {id(v) for v, value, guards in sites.sites
                if id(v) in uniform and not (
                    is_uniform(value, uniform, readonly)
                    and _guards_uniform(guards, uniform, divergent, readonly))}
        if not drop:
            break
        uniform -= drop
    return _regional(func, sites, uniform, readonly)


def _static_vars(func, sites) -> set[int]:
    """Locals (and launch variables) whose value depends on the thread id and constants
    only, assigned once: a condition on them splits the CTA the same way every time."""
    static = {id(b.var) for b in func.launch if b.kind not in CTA_KINDS}
    count: dict[int, int] = {}
    for v, _, _ in sites.sites:
        count[id(v)] = count.get(id(v), 0) + 1
    changed = True
    while changed:
        changed = False
        for v, value, _ in sites.sites:
            if id(v) not in static and count[id(v)] == 1 and _made_of(value, static):
                static.add(id(v))
                changed = True
    return static


def _made_of(e, allowed: set[int]) -> bool:
    bad = []
    walk(e, lambda n: bad.append(n) if (isinstance(n, Var) and id(n) not in allowed) or not
         isinstance(n, (Var, IntImm, BinOp, UnaryOp, Cast)) else None)
    return not bad


def _regional(func, sites, uniform, readonly):
    """Extend ``uniform`` by the locals uniform inside static thread branches, to a fix
    point; return (uniform, divergent loops, {local: branch sides})."""
    static = _static_vars(func, sites)
    regional: dict[int, frozenset] = {}
    for v, _, guards in sites.sites:
        if id(v) not in uniform:
            keys = _keys(guards, static)
            regional.setdefault(id(v), keys)
            if regional[id(v)] != keys:
                regional[id(v)] = None  # assigned in different branch sides: not regional
    regional = {k: v for k, v in regional.items() if v}
    while True:
        divergent = {key for key in sites.loop_guards
                     if not _loop_uniform(key, sites, uniform, readonly, regional, static)}
        drop = {id(v) for v, value, guards in sites.sites if id(v) in regional
                and not (_within(value, uniform, regional, regional[id(v)], readonly)
                         and _guards_ok(guards, uniform, regional, divergent, static,
                                        readonly))}
        if not drop:
            return uniform, divergent, regional
        for k in drop:
            del regional[k]


def _keys(guards, static) -> frozenset:
    return frozenset(g.key for g in guards
                     if isinstance(g, _Branch) and _made_of(g.cond, static))


def uniform_within(uniform: set[int], regional: dict[int, frozenset], keys) -> set[int]:
    """The locals uniform among the threads inside the branch sides ``keys`` (the uniform
    ones, and the regional ones whose sides are all among ``keys``)."""
    return uniform | {k for k, v in regional.items() if v <= keys}


def _within(e, uniform, regional, keys, readonly) -> bool:
    """``e`` is uniform among the threads inside branch sides ``keys``."""
    return is_uniform(e, uniform_within(uniform, regional, keys), readonly)


def _guards_ok(guards, uniform, regional, divergent, static, readonly) -> bool:
    outer: list = []
    for g in guards:
        if isinstance(g, _LoopGuard):
            if id(g.loop) in divergent:
                return False
        elif not (_made_of(g.cond, static)
                  or _within(g.cond, uniform, regional, _keys(outer, static), readonly)):
            return False
        outer.append(g)
    return True


def _loop_uniform(key, sites, uniform, readonly, regional=None, static=None) -> bool:
    """Every thread that enters loop ``key`` runs all its iterations (bounds and jumps
    uniform; with ``regional``, uniform inside the static branches around the loop)."""
    if regional is None:
        def ok(e):
            return is_uniform(e, uniform, readonly)
    else:
        keys = _keys(sites.loop_outer[key], static)

        def ok(e):
            return _within(e, uniform, regional, keys, readonly)
    if not all(ok(e) for e in sites.loop_guards[key]):
        return False
    for guards in sites.loop_jumps[key]:
        inner = guards[next(i for i, g in enumerate(guards)
                            if isinstance(g, _LoopGuard) and id(g.loop) == key) + 1:]
        if not all(ok(g.cond) for g in inner if not isinstance(g, _LoopGuard)):
            return False
    return True


def _guards_uniform(guards, uniform, divergent, readonly) -> bool:
    for g in guards:
        if isinstance(g, _LoopGuard):
            if id(g.loop) in divergent:
                return False
        elif not is_uniform(g.cond, uniform, readonly):
            return False
    return True


def is_uniform(e, uniform: set[int], readonly: frozenset[int] = frozenset()) -> bool:
    """Whether expression ``e`` has one value per CTA given the uniform locals and the
    read-only global buffers (a load from one at uniform indices is uniform)."""
    bad = []

    def look(n):
        if isinstance(n, Var) and id(n) not in uniform:
            bad.append(n)
        elif isinstance(n, (BufferLoad, Buffer)):  # walk visits a load's buffer too
            if id(n if isinstance(n, Buffer) else n.buffer) not in readonly:
                bad.append(n)
        elif not isinstance(n, (Var, IntImm, FloatImm, BinOp, UnaryOp, Cast, Select)):
            bad.append(n)
    walk(e, look)
    return not bad and not isinstance(e, Call)

