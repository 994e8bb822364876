"""The parser's control flow (:class:`ControlFlow`, a mixin of
:class:`tilewise.script.parser.Parser`): ``if`` (a compile-time condition picks a branch; a
run-time one emits ``IfThenElse`` and merges the names the branches bind), ``for`` (static
loops unrolled, device loops with loop-carried names promoted to run-time locals), ``while``,
``break`` and ``continue``. The binding rules are :mod:`.scopes`'; docs/ir.md states them
for users.
"""

from __future__ import annotations

import ast

from ..errors import TilewiseError
from ..ir.expr import Var, const
from ..ir.stmt import Assign, Break, Continue, For, IfThenElse, LetStmt, Stmt, While, seq
from . import typerules as tr
from .analysis import check_unroll
from .scopes import Scope, Unassigned, assigned_names
from .values import (LoopRange, describe, is_ir, is_scalar, literal_type,
                     unify_literal_types)


class ControlFlow:
    """``s_If``/``s_For``/``s_While``/``s_Break``/``s_Continue`` and their helpers; the
    parser's ``stmts``, ``block``, ``expr``, ``bind`` and scopes come from the class it is
    mixed into."""

    # ------------------------------------------------------------------ if
    def s_If(self, node: ast.If):
        cond = self.expr(node.test)
        if not is_ir(cond):
            self.stmts(node.body if self._compile_time_truth(cond) else node.orelse)
            return
        cond = self.truthy(cond)
        paths = [self.block(node.body, Scope("branch")), self.block(node.orelse, Scope("branch"))]
        tails = self.merge(node, paths)
        then_body = seq(*paths[0][0], *tails[0])
        else_stmts = paths[1][0] + tails[1]
        self.emit(IfThenElse(cond, then_body, seq(*else_stmts) if else_stmts else None,
                             span=self.span(node)))
        if paths[0][2] and paths[1][2]:
            self.exit = "jump"  # both paths left: what follows is dead

    def merge(self, node, paths) -> list[list[Stmt]]:
        """Settle the names the branches of an ``if`` bound (module :mod:`.scopes`);
        returns the statements to append to each branch."""
        tails: list[list[Stmt]] = [[], []]
        live = [i for i, (_, _, jumped) in enumerate(paths) if not jumped]
        names = sorted({n for i in live for n in paths[i][1].vals})
        for name in names:
            sides = [paths[i][1].vals.get(name, self.find(name)) for i in live]
            result = self.merged_value(node, name, sides, [paths[i][1] for i in live])
            if isinstance(result, tuple):  # a new run-time local: init, per-branch values
                var, init, values = result
                self.emit(LetStmt(var, init, span=self.span(node)))
                for i, v in zip(live, values):
                    if v is not None:
                        tails[i].append(Assign(var, v, span=self.span(node)))
                result = var
            if result is not self.find(name):
                self.bind(name, result, paths[live[0]][1].where.get(name))
        return tails

    def merged_value(self, node, name, sides, scopes):
        first = sides[0]
        if all(s is first for s in sides):
            return first
        if all(is_scalar(s) for s in sides) and all(
                type(s) is type(first) and s == first for s in sides):
            return first
        where = self.line(node)
        if any(isinstance(s, Unassigned) for s in sides):
            assigned = [s for s in sides if not isinstance(s, Unassigned)]
            var = next((s for s in assigned if isinstance(s, Var)
                        and self.mutable.get(id(s), 99) <= len(self.scopes)), None)
            var = var if all(s is var for s in assigned) else None  # one declared outside
            return Unassigned(f"it is assigned on only some paths through the `if` at {where}",
                              var)
        if not all(is_ir(s) or is_scalar(s) for s in sides):
            return Unassigned(f"it is bound to a different compile-time value on each path "
                              f"through the `if` at {where}, and a buffer, layout or other "
                              "compile-time value cannot depend on a run-time condition")
        return self.branch_local(name, sides, scopes)

    def branch_local(self, name, sides, scopes):
        """One run-time local for a name the branches leave with different values."""
        t = next((s.dtype for s in sides if is_ir(s)), None)
        if t is None:
            t = literal_type(sides[0])
            for s in sides[1:]:
                t = unify_literal_types(t, literal_type(s))
        outer = self.find(name)
        values = []
        for s, scope in zip(sides, scopes):
            if is_ir(s) and s.dtype != t:
                raise self.error(f"{name!r} is {t} on one path through the `if` and "
                                 f"{s.dtype} on another", f'convert with T.cast(value, "{t}")',
                                 scope.where.get(name))
            values.append(None if name not in scope.vals else tr.coerce(
                self, s, t, f"local {name!r}"))
        init = tr.coerce(self, outer, t, f"local {name!r}") if is_scalar(outer) else (
            tr.literal(self, 0, t, f"local {name!r}"))
        var = Var(name, t, span=self.span())
        self.mutable[id(var)] = len(self.scopes)
        self.pinned.append(var)
        return var, init, values

    # ------------------------------------------------------------------ loops
    def s_For(self, node: ast.For):
        if node.orelse:
            raise self.error("for/else is not supported")
        it = self.expr(node.iter)
        if isinstance(it, LoopRange):
            if not isinstance(node.target, ast.Name):
                raise self.error("the loop variable of a device loop must be a single name")
            self.device_loop(node, it)
        elif isinstance(it, (list, tuple)):
            self.static_loop(node, it)
        else:
            raise self.error(f"cannot loop over {describe(it)}",
                             "loop over range(...), T.serial(...), T.unroll(...) or a Python "
                             "list")

    def static_loop(self, node: ast.For, values):
        """A loop over a Python sequence (``T.static_range``) unrolls while parsing; its
        ``break``/``continue`` are decided at compile time."""
        check_unroll(self, values, node)
        self.loops.append(("static", self.rt_depth))
        try:
            for v in values:
                self.assign_py(node.target, v)
                self.stmts(node.body)
                if self.exit in ("break", "continue"):
                    jumped, self.exit = self.exit, None
                    if jumped == "break":
                        break
        finally:
            self.loops.pop()

    def s_While(self, node: ast.While):
        if node.orelse:
            raise self.error("while/else is not supported")
        self.device_loop(node, None)

    def device_loop(self, node, it: LoopRange | None):
        """A ``for`` over ``range``/``T.serial``/``T.unroll`` (``it``) or a ``while``."""
        candidates = {n for n in assigned_names(node.body) if self.promotable(self.find(n))}
        if candidates:
            self.promote(node, it, candidates)
        header, body, scope, _ = self.loop_pass(node, it, candidates)
        self.settle_loop(node, scope)
        if it is not None:
            self.emit(For(header, it.start, it.extent, it.kind, body, span=self.span(node)))
        elif header is not False:
            self.emit(While(header, body, span=self.span(node)))

    def loop_pass(self, node, it, names=frozenset()):
        """Parse the loop once: (loop variable or condition, body, body scope, the values
        of ``names`` at every break/continue). A condition known at compile time is True, or
        False for a loop that never runs."""
        scope = Scope("loop")
        if it is not None:
            name = node.target.id
            header = Var(name if it.step == 1 else f"{name}_k", it.start.dtype,
                         span=self.span(node))
            # no `where`: the loop variable; with a step it reads first + k * step
            scope.vals[name] = header if it.step == 1 else self.arith(
                "+", it.first, self.arith("*", header, it.step, node), node)
        else:
            cond = self.expr(node.test)
            header = self.truthy(cond) if is_ir(cond) else self._compile_time_truth(cond)
            if header is True:
                header = const(True)
        jumps: list[dict] = []
        self.loops.append(("device", self.rt_depth, names, jumps))
        try:
            body, scope, _ = self.block(node.body, scope)
        finally:
            self.loops.pop()
        return header, seq(*body), scope, jumps

    def promote(self, node, it, candidates: set[str]) -> None:
        """Make run-time locals of the compile-time numbers the loop body changes: probe the
        body (as often as a promotion changes what it computes), then declare each before
        the loop, typed by what the body assigns."""
        promoted: set[str] = set()
        for _ in range(len(candidates) + 1):
            self.blocks.append([])
            try:
                _, _, scope, jumps = self.loop_pass(node, it, candidates)
                exits = [{n: scope.vals[n] for n in candidates if n in scope.vals}] + jumps
            except TilewiseError:
                exits = None
            finally:
                self.blocks.pop()
            todo = sorted(candidates - promoted) if exits is None else sorted(
                n for n in candidates - promoted if self.changed(n, exits))
            for name in todo:
                self.promote_name(node, name, _carried_value(name, exits))
            promoted.update(todo)
            if exits is None or not todo:
                return

    def promotable(self, v) -> bool:
        """A compile-time number, or a name for a launch, size or parameter variable
        (``c = tid``): what a loop that re-assigns it turns into a run-time local."""
        return is_scalar(v) or (isinstance(v, Var) and id(v) not in self.mutable)

    def changed(self, name: str, exits: list[dict]) -> bool:
        """Whether ``name`` leaves some path through the body (its end, a break, a
        continue) with another value than it entered with."""
        old = self.find(name)
        for values in exits:
            new = values.get(name, old)
            if new is old:
                continue
            if is_ir(new) or isinstance(new, Unassigned):
                return True
            if is_scalar(new) and (type(new) is not type(old) or new != old):
                return True
        return False

    def promote_name(self, node, name: str, new) -> None:
        old = self.find(name)
        if is_ir(old):
            t = old.dtype
        elif is_ir(new):
            t = new.dtype
        elif is_scalar(new):
            t = unify_literal_types(literal_type(old), literal_type(new))
        else:
            t = literal_type(old)
        self.declare(name, tr.coerce(self, old, t, f"local {name!r} (carried by the loop)"),
                     node)

    def settle_loop(self, node, scope: Scope) -> None:
        """After a loop: names first bound inside are unassigned; a compile-time value
        bound before the loop cannot be re-bound inside it."""
        for name, v in scope.vals.items():
            old = self.find(name)
            if isinstance(old, Unassigned):
                why = (f"it is the variable of the loop at {self.line(node)}"
                       if name not in scope.where else
                       f"it is assigned only inside the loop at {self.line(node)}")
                self.bind(name, Unassigned(why))
            elif v is not old and not (is_scalar(v) and is_scalar(old) and type(v) is type(old)
                                       and v == old):
                raise self.error(f"{name!r} is {describe(old)} before the loop and is re-bound "
                                 f"to {describe(v)} inside it; a compile-time value cannot "
                                 "change from one iteration to the next",
                                 "use a new name inside the loop, or index one buffer by "
                                 "stage (smem[stage, ...]) instead of swapping buffers",
                                 scope.where.get(name))

    def s_Break(self, node):
        self.jump(node, "break", Break)

    def s_Continue(self, node):
        self.jump(node, "continue", Continue)

    def jump(self, node, kind: str, cls):
        if not self.loops:
            raise self.error(f"{kind} outside a loop")
        loop, depth = self.loops[-1][:2]
        if loop == "device":  # what the candidates hold when this path leaves the body
            names, jumps = self.loops[-1][2:]
            jumps.append({n: self.find(n) for n in names})
        if loop == "static":
            if self.rt_depth > depth:
                raise self.error(f"{kind} in a loop unrolled at compile time "
                                 "(T.static_range or a Python list) depends here on a run-time "
                                 "condition", "use a device loop (range(...)) or a condition "
                                 "known at compile time")
        else:
            self.emit(cls(span=self.span(node)))
        self.exit = kind


def _carried_value(name: str, exits):
    """The value a promoted name takes around the loop: a run-time one if any exit has one
    (its type wins), else the first changed compile-time number."""
    values = [e[name] for e in exits or () if name in e]
    return next((v for v in values if is_ir(v)), values[0] if values else None)
