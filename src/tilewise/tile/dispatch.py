"""The dispatch pass: replace every ``TileCall`` by the statements of one variant.

For each call, in program order:

1. compute the active threads from the enclosing conditions (:mod:`.context`);
2. build a :class:`DispatchContext`;
3. try the registered candidates by descending priority (only the one named by
   ``dispatch=`` when given): the first whose predicates all hold and whose
   implementation does not raise :class:`DispatchFail` wins;
4. record the decision (every candidate tried, with its reason) in the dispatch log.

When nothing accepts, a :class:`DispatchError` at the user's line lists every candidate
and its reason. :func:`explain` renders the log as text.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..errors import DispatchError, TilewiseError, did_you_mean
from ..ir.analysis import let_values
from ..ir.expr import BinOp, IntImm, UnaryOp, Var, as_int
from ..ir.printer import SCOPE_PREFIX
from ..ir.stmt import Assign, IfThenElse, LetStmt, PrimFunc, ThreadBinding, TileCall
from ..ir.visitor import Mutator, walk
from ..passes.simplify import launch_ranges
from .context import (ActiveThreads, DispatchContext, Unknown, eval_threads, launch_env,
                      scope_threads)
from .registry import DispatchFail, candidates
from .uniform import analyse, is_uniform, read_only, uniform_within


@dataclass
class Decision:
    """One line of the dispatch log."""

    call: str  # e.g. "Tx.cta.copy_async(A_smem[0:128, 0:32], A[0:128, 0:32])"
    span: object
    tried: list[tuple[str, int, str | None]] = field(default_factory=list)
    chosen: str | None = None
    notes: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)  # performance warnings (ctx.slow_path)

    def render(self) -> str:
        where = f"{self.span.file}:{self.span.line}" if self.span else "?"
        lines = [f"{where}: {self.call}"]
        for name, prio, reason in self.tried:
            mark = f"declined: {reason}"
            if name == self.chosen:
                mark = "chosen" + "".join(f" ({i})" for i in self.info)
            lines.append(f"    {name} (priority {prio}): {mark}")
        if not self.tried:
            lines.append("    no variant is registered for this primitive")
        lines += [f"    warning: {n}" for n in self.notes]
        return "\n".join(lines)


def _call_text(call: TileCall) -> str:
    from ..ir.printer import Printer

    p = Printer()
    args = [p.value(a) for a in call.args] + [f"{k}={p.value(v)}" for k, v in call.options]
    return f"{SCOPE_PREFIX.get(call.scope, call.scope)}.{call.op}({', '.join(args)})"


def _thread_var(func: PrimFunc) -> tuple[object, ThreadBinding | None]:
    for b in func.launch:
        if b.kind == "thread_id":
            return b.var, None
    var = Var("tid")
    block = func.launch_config.block
    return var, ThreadBinding(var, "thread_id", (block,), span=func.span)


class _Dispatch(Mutator):
    def __init__(self, func: PrimFunc, target):
        self.func = func
        self.target = target
        self.launch = func.launch_config
        self.tids = np.arange(self.launch.block)
        self.env = launch_env(func, self.tids)
        self.masks: list[np.ndarray] = []
        self.unknown: list[str] = []
        self.tid, self.new_binding = _thread_var(func)
        self.log: list[Decision] = []
        self.uniform, self.divergent, self.regional = analyse(func)
        self.readonly = read_only(func)
        self.sides: list[tuple[int, bool]] = []  # the if-statement sides around the call
        # Locals assigned once from immutable values are inlined into tile-call operands,
        # so that `r0 = by * 128; ... A[r0:r0 + 128]` keeps its alignment facts.
        self.immutable: set[int] = {id(b.var) for b in func.launch}
        self.reassigned = _reassigned(func.body)
        self.lets: dict[int, object] = {}
        self.let_values: dict[int, object] = {}  # every local defined once: divisor facts
        self.tensor_maps: dict = {}  # key -> TensorMapParam, filled by the tma variant
        self.loops = 0  # device loops around the current statement
        self.ranges = launch_ranges(func)  # id(Var) -> inclusive bounds, for ctx.bound

    def is_uniform(self, e) -> bool:
        """True when ``e`` has one value for the whole CTA (CTA ids, constant-bound loop
        variables, locals computed from them, loads from read-only global buffers at such
        indices), or for every thread that reaches it (locals uniform inside the static
        thread branches around it: tile/uniform.py): such a condition never splits the
        threads at the call."""
        here = uniform_within(self.uniform, self.regional, frozenset(self.sides))
        return is_uniform(e, here, self.readonly)

    def visit_For(self, s):
        self.immutable.add(id(s.var))
        lo, n = as_int(s.start), as_int(s.extent)
        if lo is not None and n is not None and n > 0:
            self.ranges[id(s.var)] = (lo, lo + n - 1)
        return self._loop(s, "loop")

    def visit_While(self, s):
        return self._loop(s, "while loop")

    def _loop(self, s, what: str):
        self.loops += 1
        try:
            return self._loop_body(s, what)
        finally:
            self.loops -= 1

    def _loop_body(self, s, what: str):
        """A loop some threads may leave early (or run longer) runs its tile calls with an
        unknown set of threads."""
        if id(s) not in self.divergent:
            return self.generic_visit(s)
        line = f" at line {s.span.line}" if s.span else ""
        self.unknown.append(f"the {what}{line} may run with only some threads (a bound, "
                            "condition, break or continue differs between threads)")
        try:
            return self.generic_visit(s)
        finally:
            self.unknown.pop()

    def inline(self, e):
        """``e`` with single-assignment locals replaced by their (immutable) definitions."""
        return _Inline(self.lets).visit(e)

    def _is_immutable(self, e) -> bool:
        bad = []
        walk(e, lambda n: bad.append(n) if isinstance(n, Var) and id(n) not in self.immutable
             and id(n) not in self.lets else None)
        found_load = []
        walk(e, lambda n: found_load.append(n) if not isinstance(
            n, (Var, IntImm, BinOp, UnaryOp)) and n is not e else None)
        return not bad and not found_load and isinstance(e, (Var, IntImm, BinOp, UnaryOp))

    # -- active threads -----------------------------------------------------------
    def active(self) -> ActiveThreads:
        mask = np.ones(self.launch.block, bool)
        for m in self.masks:
            mask &= m
        return ActiveThreads(mask, not self.unknown, tuple(self.unknown))

    def branch(self, cond_mask, text, body):
        if cond_mask is None:
            self.unknown.append(text)
        else:
            self.masks.append(cond_mask)
        try:
            return self.visit(body)
        finally:
            (self.unknown if cond_mask is None else self.masks).pop()

    def side(self, s, which: bool, uniform: bool, mask, text, body):
        """Visit one side of ``s`` (its key on ``self.sides``; its mask unless uniform)."""
        self.sides.append((id(s), which))
        try:
            return self.visit(body) if uniform else self.branch(mask, text, body)
        finally:
            self.sides.pop()

    def visit_IfThenElse(self, s: IfThenElse):
        from ..ir.printer import script

        text = script(s.cond)
        uniform = self.is_uniform(s.cond)
        m = None
        if not uniform:
            try:
                m = eval_threads(s.cond, self.env, self.tids) != 0
            except Unknown:
                pass
        then = self.side(s, True, uniform, m, text, s.then_body)
        other = None
        if s.else_body is not None:
            other = self.side(s, False, uniform, None if m is None else ~m, f"not ({text})",
                              s.else_body)
        if then is s.then_body and other is s.else_body:
            return s
        return dataclasses.replace(s, then_body=then, else_body=other)

    def visit_LetStmt(self, s: LetStmt):
        if id(s.var) in self.reassigned:
            return s  # its value depends on the path taken: neither inlined nor evaluated
        self.let_values[id(s.var)] = s.value  # (known_multiple sees through it)
        if self._is_immutable(s.value):
            self.lets[id(s.var)] = self.inline(s.value)
        try:
            self.env[id(s.var)] = eval_threads(s.value, self.env, self.tids)
        except Unknown:
            pass
        return s

    # -- the call -------------------------------------------------------------------
    def visit_TileCall(self, s: TileCall):
        if self.lets:
            s = dataclasses.replace(s, args=tuple(self.inline(a) for a in s.args),
                                    options=tuple((k, self.inline(v)) for k, v in s.options))
        group, active = scope_threads(s.scope, self.launch.block), self.active()
        _whole_groups_exist(s, group, self.launch.block, active)
        ctx = DispatchContext(self.target, s.scope, group, active, self.launch, s, s.span,
                              tid=self.tid, tensor_maps=self.tensor_maps,
                              in_loop=self.loops > 0, ranges=self.ranges)
        d = Decision(_call_text(s), s.span)
        self.log.append(d)
        try:
            with let_values(self.let_values):
                body = _choose(ctx, d)
        except TilewiseError as e:
            raise e.with_span(s.span) from None
        d.notes.extend(ctx.notes)
        d.info.extend(ctx.info)
        d.slow.extend(ctx.slow)
        return body


def _whole_groups_exist(s: TileCall, group: int, block: int, active: ActiveThreads) -> None:
    """A call on warpgroups in a CTA whose size is not a multiple of 128 (288 threads: two
    warpgroups and a warp) is valid on the whole warpgroups; reached by a thread of the last,
    partial group it is refused here, whatever variant would take it."""
    last = block // group * group
    if last == block or not active.exact or not active.mask[last:].any():
        return
    _, why = active.full_groups(group)
    raise DispatchError(f"{_call_text(s)} runs on whole {s.scope}s of {group} threads: {why}",
                        s.span, hint=f"call it from the whole {s.scope}s only (this CTA's "
                        f"{block} threads make {block // group} of {group} and one of "
                        f"{block - last}), declare a multiple of {group} threads "
                        f"(T.thread_id([{group}])), or use a smaller scope")


def _forced(ctx: DispatchContext, cands):
    name = ctx.option("dispatch")
    if name is None:
        return cands
    chosen = [v for v in cands if v.name == name]
    if not chosen:
        known = [v.name for v in cands]
        raise DispatchError(
            f"{ctx.call.op} has no variant {name!r}", ctx.span,
            hint=f"variants of {ctx.call.op}: " + (", ".join(known) or "none")
            + (f"; {did_you_mean(name, known)}" if known else ""))
    return chosen


def _try(v, ctx: DispatchContext):
    ok, reason = v.check(ctx)
    if not ok:
        return None, reason
    try:
        return v.impl(ctx), None
    except DispatchFail as e:
        return None, e.reason


def _choose(ctx: DispatchContext, d: Decision):
    for v in _forced(ctx, candidates(ctx.call.op)):
        ctx.notes.clear()
        ctx.info.clear()
        ctx.slow.clear()
        body, reason = _try(v, ctx)
        d.tried.append((v.name, v.priority, reason))
        if body is not None:
            d.chosen = v.name
            return body
    lines = "\n".join(f"  {n} (priority {p}): {r}" for n, p, r in d.tried) or "  (none)"
    forced = ctx.option("dispatch")
    what = (f"variant {forced!r} (forced by dispatch=) cannot implement this "
            f"{ctx.call.op}" if forced else f"no variant of {ctx.call.op} accepts this call")
    hint = ("remove dispatch= to let another variant take it" if forced else
            "change the operands so that one variant's rule holds")
    raise DispatchError(f"{what}:\n{lines}", ctx.span, hint=hint)


def dispatch(func: PrimFunc, target) -> tuple[PrimFunc, list[Decision]]:
    """``func`` with every tile call replaced, and the dispatch log."""
    pass_ = _Dispatch(func, target)
    try:
        body = pass_.visit(func.body)
    except DispatchError as e:
        e.dispatch_log = pass_.log
        raise
    out = func.with_body(body)
    if pass_.new_binding is not None and _uses(body, pass_.tid):
        out = dataclasses.replace(out, launch=out.launch + (pass_.new_binding,))
    if pass_.tensor_maps:
        maps = tuple(pass_.tensor_maps.values())
        out = dataclasses.replace(out, params=out.params + tuple(m.var for m in maps),
                                  attrs=out.attrs + (("tensor_maps", maps),))
    return out, pass_.log


def _reassigned(body) -> set[int]:
    out: set[int] = set()
    walk(body, lambda n: out.add(id(n.var)) if isinstance(n, Assign) else None)
    return out


def _uses(body, var) -> bool:
    found = []
    walk(body, lambda n: found.append(True) if n is var else None)
    return bool(found)


class _Inline(Mutator):
    """Replaces the Vars ``lets`` maps (by id) with their definitions."""

    def __init__(self, lets: dict):
        self.lets = lets

    def visit_Var(self, v):
        return self.lets.get(id(v), v)

    visit_SizeVar = visit_Var
