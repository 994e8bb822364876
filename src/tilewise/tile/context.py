"""What a variant knows about one tile call: :class:`DispatchContext`, and the
active-thread analysis that fills its ``active`` field.

Active threads: every CTA thread starts active; each enclosing ``if`` (or ``else``)
condition is evaluated with numpy over all linear thread ids, thread-kind variables taking
their ``thread_value``. Conditions on anything else (loop variables, CTA ids, loaded
values) are *unknown*: the set is then "possibly partial" and a variant that needs every
thread of its scope declines. ``T.ptx.elect_sync()`` elects lane 0 of each warp.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.expr import BinOp, BufferRegion, Call, Expr, IntImm, UnaryOp, Var
from ..ir.launch import CTA_KINDS, WARP, WARPGROUP, thread_value
from ..ir.printer import script

SCOPE_THREADS = {"thread": 1, "warp": WARP, "warpgroup": WARPGROUP}

_NP_BIN = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod,
    "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor, "<<": np.left_shift,
    ">>": np.right_shift, "min": np.minimum, "max": np.maximum, "<": np.less,
    "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
    "!=": np.not_equal, "and": np.logical_and, "or": np.logical_or,
}


class Unknown(Exception):
    """A condition depends on something other than the thread id."""


def eval_threads(e: Expr, env: dict[int, np.ndarray], tids: np.ndarray) -> np.ndarray:
    """``e`` evaluated for every thread (``env``: id(Var) -> per-thread values)."""
    if isinstance(e, IntImm):
        return np.full(tids.shape, e.value, np.int64)
    if isinstance(e, Var):
        if id(e) not in env:
            raise Unknown(e.name)
        return env[id(e)]
    if isinstance(e, BinOp) and e.op in _NP_BIN:
        a, b = eval_threads(e.a, env, tids), eval_threads(e.b, env, tids)
        if e.op in ("//", "%") and (b == 0).any():
            raise Unknown("division by zero")
        return _NP_BIN[e.op](a, b).astype(np.int64)
    if isinstance(e, UnaryOp):
        a = eval_threads(e.a, env, tids)
        return {"-": -a, "~": ~a, "not": (a == 0).astype(np.int64)}[e.op]
    if isinstance(e, Call) and e.op == "ptx.elect_sync":
        return (tids % WARP == 0).astype(np.int64)
    raise Unknown(script(e))


@dataclass(frozen=True)
class ActiveThreads:
    """The CTA threads that reach a call. ``exact`` is False when some enclosing condition
    could not be evaluated (``unknown`` names it); ``mask`` is then an over-estimate."""

    mask: np.ndarray
    exact: bool = True
    unknown: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return int(self.mask.sum())

    def groups(self, size: int) -> np.ndarray:
        """The mask as rows of ``size`` threads; a CTA whose size is not a multiple of it
        (288 threads: two warpgroups and one warp) has a last row padded with inactive
        threads that do not exist."""
        short = -len(self.mask) % size
        return np.concatenate([self.mask, np.zeros(short, bool)]).reshape(-1, size)

    def full_groups(self, size: int) -> tuple[bool, str | None]:
        """Whether every group of ``size`` consecutive threads is all or nothing active
        (and, for the CTA, that some thread is)."""
        if not self.exact:
            return False, ("the active threads are unknown at compile time (condition "
                           f"{self.unknown[0]!r}); all threads of the scope must be active")
        n_threads = len(self.mask)
        groups = self.groups(size)
        partial = np.nonzero(groups.any(axis=1) & ~groups.all(axis=1))[0]
        if len(partial):
            g = int(partial[0])
            n = int(groups[g].sum())
            missing = (f" (the CTA has only {n_threads - g * size} threads there)"
                       if g * size + size > n_threads else "")
            return False, (f"only {n} of the {size} threads of group {g} (threads "
                           f"{g * size}..{g * size + size - 1}) are active{missing}; all "
                           "threads of the scope must be active")
        return True, None


@dataclass
class DispatchContext:
    """Everything a predicate or a variant may look at for one tile call."""

    target: object  # tilewise.target.Target
    scope_kind: str  # thread | warp | warpgroup | cta | cluster
    thread_count: int  # threads that execute the call together
    active: ActiveThreads
    launch: object  # tilewise.ir.launch.LaunchConfig
    call: object  # tilewise.ir.stmt.TileCall
    span: object = None
    tid: Expr | None = None  # the linear thread id (threadIdx.x) as an expression
    in_loop: bool = False  # the call sits in a device loop (shared scratch is reused)
    notes: list[str] = field(default_factory=list)  # warnings recorded in the log
    slow: list[str] = field(default_factory=list)  # slow paths: TilewisePerformanceWarning
    info: list[str] = field(default_factory=list)  # the chosen plan, for the log
    tensor_maps: dict | None = None  # the kernel's TMA tensor maps, shared by its calls
    ranges: dict | None = None  # id(Var) -> inclusive bounds (launch ids, constant loops)

    def tensor_map(self, buffer, spec) -> Var:
        """The hidden kernel parameter carrying tensor map ``spec`` of global ``buffer``: one
        per distinct (buffer, spec) in the kernel, added to its parameters by the dispatch
        pass (``PrimFunc.attrs["tensor_maps"]``)."""
        from ..ir import dtype as dt
        from ..ptx.tma import TensorMapParam

        key = (id(buffer), spec.dtype, tuple(map(_key_text, spec.dims)),
               tuple(map(_key_text, spec.strides)), spec.box, spec.swizzle, spec.oob,
               spec.l2_promotion)
        maps = self.tensor_maps if self.tensor_maps is not None else {}
        found = maps.get(key)
        if found is None:
            same = sum(1 for p in maps.values() if p.buffer is buffer)
            name = f"{buffer.name}_tmap" + (f"{same}" if same else "")
            found = maps[key] = TensorMapParam(Var(name, dt.tensormap), buffer, spec)
        return found.var

    @property
    def dst(self) -> BufferRegion:
        return self.call.args[0]

    @property
    def src(self) -> BufferRegion:
        return self.call.args[1]

    def option(self, name: str, default=None):
        return self.call.option(name, default)

    @property
    def scope_tid(self) -> Expr:
        """The thread's index inside its scope instance (0 for thread scope)."""
        if self.scope_kind == "thread":
            return IntImm(0)
        if self.scope_kind == "cta":
            return self.tid
        return self.tid % self.thread_count

    def warn(self, text: str) -> None:
        self.notes.append(text)

    def slow_path(self, text: str) -> None:
        """A note that the chosen variant is a slow path (a scalar loop on one thread):
        logged, and raised as a :class:`~tilewise.errors.TilewisePerformanceWarning` at the
        call's line by ``tw.compile`` and ``tw.simulate``."""
        self.notes.append(text)
        self.slow.append(text)

    def bound(self, e: Expr) -> tuple[int, int] | None:
        """Inclusive bounds of an integer expression over every thread, CTA and iteration
        of the enclosing constant-bound loops (None when unknown)."""
        from ..passes.simplify import bound

        return bound(e, self.ranges or {})


def _key_text(e) -> str:
    return str(e) if isinstance(e, int) else script(e)


def scope_threads(scope: str, block: int) -> int:
    return block if scope in ("cta", "cluster") else SCOPE_THREADS[scope]


def launch_env(func, tids: np.ndarray) -> dict[int, np.ndarray]:
    """Per-thread values of the thread-kind launch variables."""
    env = {}
    for b in func.launch:
        if b.kind not in CTA_KINDS:
            env[id(b.var)] = np.asarray(thread_value(b.kind, tids), np.int64)
    return env


__all__ = ["ActiveThreads", "DispatchContext", "Unknown", "eval_threads", "launch_env",
           "scope_threads", "thread_value"]
