"""Flat IR -> a tree of Python closures, built once per kernel and run once per CTA.

Every expression becomes ``f(ctx) -> value`` and every statement ``run(ctx)``; the tree
walk, dtype dispatch, buffer placement and operand binding all happen here, at compile
time, so executing a CTA is a sequence of numpy operations over its active threads.
Control flow is SIMT: an ``if`` whose condition differs between threads runs both
branches, each with its own active set; a ``for`` whose bounds are uniform runs once for
all threads, otherwise each thread runs its own trip count (masked iterations); a
``while`` runs while any thread's condition holds, each thread leaving when its own
condition fails. ``break`` and ``continue`` *park* the threads that execute them
(``ctx.parked``): a sequence drops parked threads from its active set after any statement
that may jump, the loop releases its continuing threads at the end of the iteration and
its breaking threads when it ends.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError, TilewiseError
from ..ir import expr as E
from ..ir.dtype import DTYPES
from ..ir.launch import CTA_KINDS, cta_value, thread_value
from ..ir.visitor import jumps_out
from ..ptx.table import PTX_OPS
from . import values as V
from .access import RegBlock, make_address, make_load, make_store
from .checks import Checks
from .memory import StoragePlan
from .registry import Site, load_all
from .scheduler import blocks
from .state import masked


_BOOL = DTYPES["bool"]


class Program:
    """A compiled kernel: ``body(ctx)`` runs one CTA; ``bind_launch(ctx, cta)`` sets the
    launch variables; ``plan`` places its buffers (shared ones where ``shared``, the
    pipeline's SharedPlan, says); ``n_slots`` scalar slots. ``perf``: a
    :class:`~.perf.PerfObserver` that sees every shared / global access (None: none);
    ``checks`` the check level its loads and stores were compiled for (:mod:`.checks`)."""

    def __init__(self, func, shared=None, perf=None, checks: str = "full"):
        self.func = func
        self.perf = perf
        self.checks = Checks.of(checks)
        self.plan = StoragePlan(func, shared, self.checks)
        self.slots: dict[int, int] = {}
        self.semantics = load_all()
        self._launch = [(self.slot(b.var), b) for b in func.launch]
        self.span = None  # the statement being compiled: loads a variant made carry none
        self.cluster = func.launch_config.cluster
        self.body = self.stmt(func.body)

    @property
    def n_slots(self) -> int:
        return len(self.slots)

    def slot(self, var) -> int:
        return self.slots.setdefault(id(var), len(self.slots))

    def bind_launch(self, ctx, cta: tuple, values: dict) -> None:
        """Set every launch variable for CTA ``cta`` (x, y, z), and the scalar parameters
        and sizes (``values``: id(param) -> numpy scalar)."""
        for key, v in values.items():
            if key in self.slots:
                ctx.vals[self.slots[key]] = v
        for slot, b in self._launch:
            d = V.np_dtype(b.var.dtype)
            if b.kind in CTA_KINDS:
                ctx.vals[slot] = d.type(cta_value(b.kind, b.dim, cta, self.cluster))
            else:
                ctx.vals[slot] = thread_value(b.kind, ctx.tids).astype(d)

    # ------------------------------------------------------------------ statements
    def stmt(self, s):
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise SimulationError(f"the simulator cannot execute {type(s).__name__} "
                                  "(is the program lowered to flat IR?)", s.span)
        outer, self.span = self.span, s.span or self.span
        try:  # a load a variant made carries no place: it is reported at its statement's
            return _guard(method(s), self.span)
        finally:
            self.span = outer

    def s_SeqStmt(self, s):
        body = tuple((self.stmt(x), jumps_out(x)) for x in s.stmts)
        if not any(j for _, j in body):
            fns = tuple(f for f, _ in body)

            def run(ctx):
                for f in fns:
                    f(ctx)
            return run

        def run_jumping(ctx):
            for f, jumps in body:
                f(ctx)
                if jumps and not _drop_parked(ctx):
                    return
        return run_jumping

    def s_Break(self, s):
        return lambda ctx: _park(ctx, "broke")

    def s_Continue(self, s):
        return lambda ctx: _park(ctx, "continued")

    def s_While(self, s):
        cond, body = self.expr(s.cond), self.stmt(s.body)

        def run(ctx):
            with _LoopFrame(ctx) as loop:
                while loop.next_iteration():
                    c = cond(ctx)
                    if np.ndim(c) != 0:
                        loop.narrow(c)
                    elif not c:
                        break
                    if ctx.n_active():
                        body(ctx)
        return run

    def s_DeclBuffer(self, s):
        self.plan.declare(s.buffer)
        return _nop

    def s_LetStmt(self, s):
        return self._write(s.var, s.value)

    s_Assign = s_LetStmt

    def _write(self, var, value):
        slot, d, f = self.slot(var), V.np_dtype(var.dtype), self.expr(value)

        def run(ctx):
            write_slot(ctx, slot, V.as_type(f(ctx), d), d)
        return run

    def s_BufferStore(self, s):
        store, idx = make_store(self.plan, s.buffer, self.span), self.expr(s.indices[0])
        if self.perf is not None:
            store = self.perf.wrap_access(store, self.plan, s.buffer, self.span, "st")
        val, d = self.expr(s.value), V.np_dtype(s.buffer.dtype)
        return lambda ctx: store(ctx, idx(ctx), V.as_type(val(ctx), d))

    def s_Evaluate(self, s):
        f = self.expr(s.value)
        return lambda ctx: (f(ctx), None)[1]

    def s_IfThenElse(self, s):
        cond = self.expr(s.cond)
        then = self.stmt(s.then_body)
        other = self.stmt(s.else_body) if s.else_body is not None else _nop
        fork = blocks(s.then_body) or (s.else_body is not None and blocks(s.else_body))

        def run(ctx):
            c = cond(ctx)
            if np.ndim(c) == 0:
                (then if c else other)(ctx)
                return
            if c.all():
                then(ctx)
            elif not c.any():
                other(ctx)
            else:
                act = ctx.active()
                if fork:  # each side may wait for the other: run them as fibers
                    ctx.sched.fork(ctx, [(act[c], then), (act[~c], other)])
                    return
                masked(ctx, act[c], then)
                masked(ctx, act[~c], other)
        return run

    def s_For(self, s):
        slot, d = self.slot(s.var), V.np_dtype(s.var.dtype)
        start, extent, body = self.expr(s.start), self.expr(s.extent), self.stmt(s.body)

        def run(ctx):
            b, e = start(ctx), extent(ctx)
            with _LoopFrame(ctx) as loop:
                if np.ndim(b) == 0 and np.ndim(e) == 0:
                    for i in range(int(b), int(b) + int(e)):
                        if not loop.next_iteration():
                            break
                        ctx.vals[slot] = d.type(i)
                        body(ctx)
                else:
                    _masked_loop(ctx, loop, slot, d, ctx.per_thread(b), ctx.per_thread(e),
                                 body)
        return run

    # ------------------------------------------------------------------ expressions
    def expr(self, e):
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise SimulationError(f"the simulator cannot evaluate {type(e).__name__}", e.span)
        return method(e)

    def e_Var(self, e):
        if id(e) not in self.slots and not any(b.var is e for b in self.func.launch):
            self.slot(e)
        slot = self.slot(e)

        def read(ctx):
            v = ctx.vals[slot]
            if ctx.act is None or np.ndim(v) == 0:
                return v
            return v[ctx.act]
        return read

    e_SizeVar = e_Var

    def e_IntImm(self, e):
        c = V.constant(e.value, e.type)
        return lambda ctx: c

    e_FloatImm = e_IntImm

    def e_StringImm(self, e):
        return lambda ctx: e.value

    def e_BinOp(self, e):
        fn = V.binop_fn(e.op, e.a.dtype)
        if fn is None:
            raise SimulationError(f"operator {e.op!r} is not defined on {e.a.dtype}", e.span)
        if _fusable(e):
            return self._fused(e)
        fa, fb, d = self.expr(e.a), self.expr(e.b), V.np_dtype(e.dtype)
        return lambda ctx: V.as_type(fn(fa(ctx), fb(ctx)), d)

    def _fused(self, e):
        """An integer expression tree as one Python function of numpy calls (no closure and
        conversion per node: the ufuncs of :func:`values.binop_fn` keep the operands' type);
        its leaves (variables, loads, calls, casts) are their own closures."""
        env: dict = {}

        def name(obj) -> str:
            key = f"_{len(env)}"
            env[key] = obj
            return key

        def gen(x, depth: int = 0) -> str:  # deeper trees: a fused function per subtree
            if isinstance(x, E.BinOp) and _fusable(x) and depth < _FUSE_DEPTH:
                return (f"{name(V.binop_fn(x.op, x.a.dtype))}({gen(x.a, depth + 1)}, "
                        f"{gen(x.b, depth + 1)})")
            if isinstance(x, E.IntImm):
                return name(V.constant(x.value, x.type))
            return f"{name(self.expr(x))}(ctx)"
        return eval(f"lambda ctx: {gen(e)}", env)  # noqa: S307 - our own generated text

    def e_UnaryOp(self, e):
        fn = V.unary_fn(e.op, e.a.dtype)
        if fn is None:
            raise SimulationError(f"operator {e.op!r} is not defined on {e.a.dtype}", e.span)
        fa, d = self.expr(e.a), V.np_dtype(e.dtype)
        return lambda ctx: V.as_type(fn(fa(ctx)), d)

    def e_Cast(self, e):
        f, src, dst = self.expr(e.value), e.value.dtype, e.type
        return lambda ctx: V.cast(f(ctx), src, dst)

    def e_Select(self, e):
        c, t, f = self.expr(e.cond), self.expr(e.true_value), self.expr(e.false_value)
        d = V.np_dtype(e.dtype)

        def sel(ctx):
            cv = c(ctx)
            if np.ndim(cv) == 0:
                return V.as_type((t if cv else f)(ctx), d)
            return _select_masked(ctx, cv, t, f, d)
        return sel

    def e_BufferLoad(self, e):
        load, idx = make_load(self.plan, e.buffer, e.span or self.span), self.expr(e.indices[0])
        if self.perf is not None:
            load = self.perf.wrap_access(load, self.plan, e.buffer, e.span or self.span, "ld")
        return lambda ctx: load(ctx, idx(ctx))

    def e_AddressOf(self, e):
        addr = make_address(self.plan, e.buffer)
        idx = self.expr(e.indices[0]) if e.indices else (lambda ctx: 0)
        return lambda ctx: addr(idx(ctx))

    def e_Call(self, e):
        op = PTX_OPS.get(e.op)
        fn = self.semantics.get(e.op)
        if op is None or fn is None:
            raise SimulationError(f"{e.op!r} has no simulator semantics", e.span)
        site = Site(e, e.span, op)
        operands, regs_in = self._operands(op, e, site)
        if self.perf is not None:
            fn = self.perf.wrap_call(fn, site)
        report_key = e.op

        def call(ctx):
            ctx.report.instructions[report_key] += ctx.n_active()
            args = [a(ctx) for a in operands]
            if regs_in is not None:
                args.extend(regs_in(ctx))
            return fn(ctx, site, args)
        return _guard(call, e.span)

    def _operands(self, op, e, site):
        """The operand closures, and ``regs_in(ctx) -> [values]`` reading the register
        operands in one gather (None when they are read one by one, or not at all)."""
        fixed = len(op.params)
        out = []
        for p, a in zip(op.params, e.args[:fixed]):
            out.append(_const_fn(_immediate(a)) if p.static or a is None else self.expr(a))
        site.operand_addrs = tuple(
            self._reg_address(a) if p.kind == "reg32" and _local_load(a) else None
            for p, a in zip(op.params, e.args[:fixed]) if p.kind == "reg32")
        regs = e.args[fixed:]
        site.block = RegBlock.build(self.plan, regs, [r.span or self.span for r in regs])
        if op.writes_regs:
            site.regs = tuple(self._lvalue(r) for r in regs)
            site.reg_addrs = tuple(self._reg_address(r) for r in regs)
        if not op.reads_regs:
            return out, None
        # read-write registers (accumulators): the instruction checks what it reads
        checked = not op.writes_regs
        if site.block is not None:
            block = site.block
            return out, lambda ctx: block.read(ctx, checked)
        out.extend(self._reg_value(r, checked) for r in regs)
        return out, None

    def _reg_value(self, r, init_check: bool = True):
        """A register operand read by the instruction itself (not an ordinary load)."""
        if not isinstance(r, E.BufferLoad):
            return self.expr(r)
        load = make_load(self.plan, r.buffer, r.span, operand=True, init_check=init_check)
        idx = self.expr(r.indices[0])
        return lambda ctx: load(ctx, idx(ctx))

    def _reg_address(self, r):
        addr, idx = make_address(self.plan, r.buffer), self.expr(r.indices[0])
        return lambda ctx: addr(idx(ctx))

    def _lvalue(self, r):
        store = make_store(self.plan, r.buffer, r.span, operand=True)
        idx = self.expr(r.indices[0])
        d = V.np_dtype(r.buffer.dtype)

        def write(ctx, vals):  # registers receive bit patterns, not converted values
            vals = np.asarray(vals)
            store(ctx, idx(ctx), vals.view(d) if vals.dtype.itemsize == d.itemsize
                  else V.as_type(vals, d))
        return write


# ---------------------------------------------------------------------- helpers
_FUSE_DEPTH = 48  # nested calls in one generated function (Python's parser allows 200 (s)


def _fusable(e) -> bool:
    """An integer / bool operator whose numpy ufunc returns the right type by itself (both
    operands of one type, the result that type or bool)."""
    a, b = e.a.dtype, e.b.dtype
    return (a == b and a.kind in ("int", "uint", "bool") and e.dtype in (a, _BOOL)
            and e.op in V.FUSABLE)


def _nop(ctx):
    return None


def _local_load(a) -> bool:
    return isinstance(a, E.BufferLoad) and a.buffer.scope == "local"


def _const_fn(v):
    return lambda ctx: v


def _immediate(a):
    if a is None:
        return None
    if isinstance(a, E.StringImm):
        return a.value
    return E.as_int(a)


def _guard(fn, span):
    """Turn an unexpected Python error into a SimulationError at the kernel's line."""

    def run(ctx):
        try:
            return fn(ctx)
        except TilewiseError as e:
            raise e.with_span(span) from None
        except Exception as exc:  # noqa: BLE001 - reported with the user's line
            raise SimulationError(f"simulator failure: {type(exc).__name__}: {exc}",
                                  span) from exc
    return run


def write_slot(ctx, slot, v, d) -> None:
    """Assign ``v`` to a scalar slot for the active threads only."""
    if ctx.act is None:
        ctx.vals[slot] = v
        return
    cur = ctx.vals[slot]
    full = np.zeros(ctx.n, d) if cur is None else np.array(np.broadcast_to(cur, (ctx.n,)), d)
    full[ctx.act] = v
    ctx.vals[slot] = full


def _masked_loop(ctx, loop, slot, d, starts, extents, body):
    """A loop whose bounds differ between threads: iteration ``k`` runs the threads whose
    trip count exceeds ``k``."""
    act = ctx.active()
    full_extents = np.zeros(ctx.n, np.int64)
    full_extents[act] = extents
    trips = int(extents.max()) if len(extents) else 0
    for k in range(trips):
        if not loop.next_iteration():
            break
        run = ctx.active()
        run = run[full_extents[run] > k]
        full = np.zeros(ctx.n, d)
        full[act] = starts + k
        ctx.vals[slot] = full
        masked(ctx, run, body)


class _LoopFrame:
    """One executing loop: which threads broke out, which continued this iteration.

    ``next_iteration()`` releases the threads that continued, drops those that broke and
    says whether any thread is left; leaving the frame releases the breaking threads and
    restores the active set the loop started with."""

    def __init__(self, ctx):
        from ..knobs import knobs

        self.ctx = ctx
        self.count = 0
        self.limit = knobs.sim_max_loop

    def __enter__(self):
        ctx = self.ctx
        self.act0 = ctx.act
        self.outer = ctx.loop
        self.broke = self.continued = None
        ctx.loop = self
        return self

    def __exit__(self, *exc):
        ctx = self.ctx
        ctx.loop = self.outer
        for left in (self.broke, self.continued):
            if left is not None:
                ctx.parked &= ~left
        ctx.act = self.act0
        return False

    def next_iteration(self) -> bool:
        ctx = self.ctx
        self.count += 1
        if self.count > self.limit:
            raise SimulationError(f"a loop ran more than {self.limit} iterations (does its "
                                  "condition ever become false?)",
                                  hint="fix the loop condition; a loop that really runs "
                                  "longer needs TILEWISE_SIM_MAX_LOOP raised")
        if self.continued is not None:
            ctx.parked &= ~self.continued
            self.continued[:] = False
        ctx.act = self.act0
        if self.broke is not None:
            act = ctx.active()
            act = act[~self.broke[act]]
            ctx.act = None if len(act) == ctx.n else act
            return len(act) > 0
        return True

    def narrow(self, cond) -> None:
        """Threads whose ``while`` condition failed leave the loop (like a break)."""
        act = self.ctx.active()
        self.mark("broke", act[~cond])
        kept = act[cond]
        self.ctx.act = None if len(kept) == self.ctx.n else kept

    def mark(self, what: str, tids) -> None:
        ctx = self.ctx
        if getattr(self, what) is None:
            setattr(self, what, np.zeros(ctx.n, bool))
        getattr(self, what)[tids] = True
        if ctx.parked is None:
            ctx.parked = np.zeros(ctx.n, bool)
        ctx.parked[tids] = True


def _park(ctx, what: str) -> None:
    if ctx.loop is None:
        raise SimulationError(f"{'break' if what == 'broke' else 'continue'} outside a loop")
    ctx.loop.mark(what, ctx.active())


def _drop_parked(ctx) -> bool:
    """Remove parked threads from the active set; False when none is left."""
    if ctx.parked is None:
        return True
    act = ctx.active()
    act = act[~ctx.parked[act]]
    ctx.act = None if len(act) == ctx.n else act
    return len(act) > 0




def _select_masked(ctx, cv, t, f, d):
    act = ctx.active()
    out = np.empty(len(act), d)
    if cv.any():
        out[cv] = np.broadcast_to(masked(ctx, act[cv], t), (int(cv.sum()),))
    if not cv.all():
        out[~cv] = np.broadcast_to(masked(ctx, act[~cv], f), (int((~cv).sum()),))
    return out
