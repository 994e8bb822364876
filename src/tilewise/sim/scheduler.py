"""The one scheduler of the simulator: whatever may wait for someone else runs as a *task*
under it -- the CTAs of a cluster, and the two sides of a warp-specialised branch inside a
CTA (*fibers*).

**Tasks.** The simulator runs a CTA's threads together, masked (:mod:`.state`), which
serialises the two sides of a divergent branch. A warp-specialised kernel cannot run that
way: its producer warps wait on mbarriers its consumer warps arrive on, and the other way
round. So a branch whose two sides both have threads and which can block (an instruction
whose table row declares ``traits.blocks``: :func:`blocks`) is *forked*: each side becomes
a child task with its own active mask, loop frame and parked threads, and the parent
resumes when every child has finished (the threads reconverge). The CTAs of a cluster may
wait on one another too (a multicast or a remote arrive completes another CTA's mbarrier,
the cluster barrier), so each is a root task of the same scheduler. A lone CTA is a
scheduler of one root: it runs in the caller's thread and makes no thread unless it forks.

**One baton.** Every task is a Python thread, but only the one holding the baton runs, so
execution is deterministic and the simulator's state needs no locks. A task keeps the
baton until it blocks: a wait that is not satisfied hands it to the next runnable task in
**round-robin** order (the roots by rank, each task's children right after it) and polls
again when the baton comes back. Switching only at blocking points keeps every thread's
program order and is a legal schedule of the hardware's.

**One abort.** A task that raises stops every other: they unwind (:class:`_Abort`) when the
baton reaches them, and :meth:`Scheduler.run` raises the first error in the caller.

**One deadlock rule.** ``progress`` counts the events that can change what a wait sees: a
task started or finished, a fork, a wait satisfied, a poll that completed work (a drain,
:meth:`Scheduler.note_progress`). A task whose wait is unsatisfied records the count; when
every other runnable task is blocked and has polled in vain since the last progress,
nothing can ever change: :meth:`Scheduler.block` returns False and the wait reports the
deadlock, naming every other blocked wait (:meth:`Scheduler.blocked_elsewhere`: which CTA
and threads, the instruction, the user's line, what it still waits for).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .registry import mechanism


def blocks(stmt) -> bool:
    """Whether ``stmt`` (flat IR) contains an instruction that can block on other threads
    (its row's ``traits.blocks``, :mod:`tilewise.ptx.traits`)."""
    from tilewise.ptx.table import uses

    return uses(stmt, lambda row: row.traits.blocks)


class _Abort(BaseException):
    """Unwinds a task after another task raised (never caught by the simulator's guards,
    which catch Exception)."""


@dataclass
class Wait:
    """What a blocked task waits for, for deadlock reports: instruction ``what`` at ``span``
    of CTA ``ctx``; ``state()`` gives ``(thread, address or None, what is still missing)``
    at the time of the report (the first thread still waiting)."""

    ctx: object
    what: str
    span: object
    state: Callable[[], tuple]

    def describe(self) -> str:
        tid, addr, missing = self.state()
        line = f"line {self.span.line}" if self.span is not None else "an unknown line"
        text = f"{self.ctx.where(tid, addr)} waits at {line} in {self.what}"
        return f"{text}: {missing}" if missing else text


class _Task:
    __slots__ = ("fn", "ctx", "state", "sem", "thread", "parent", "children", "done", "wait",
                 "seen", "main")

    def __init__(self, fn, ctx, state, parent, main=False):
        self.fn, self.ctx, self.state, self.parent, self.main = fn, ctx, state, parent, main
        self.sem = threading.Semaphore(0)
        self.thread = None
        self.children = 0  # live children it is joining
        self.done = False
        self.wait: Wait | None = None  # while blocked: what on
        self.seen = -1  # the progress count of its last unsatisfied poll


class _Worker:
    """A thread that runs tasks one after another (see :class:`_Pool`)."""

    def __init__(self, pool):
        self.pool, self.job = pool, None
        self.sem = threading.Semaphore(0)
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            self.sem.acquire()
            fn, arg = self.job
            self.job = None
            fn(arg)  # the task handed the baton on when it finished
            self.pool.idle.append(self)


class _Pool:
    """Idle worker threads, reused by every scheduler: a task runs on an idle worker instead
    of a thread of its own (starting a thread per forked side or cluster CTA was a tenth of
    the time of a warp-specialised GEMM's simulation). Only the baton holder starts tasks;
    a finished worker returns itself to ``idle`` (list operations are atomic)."""

    def __init__(self):
        self.idle: list[_Worker] = []

    def run(self, fn, arg) -> _Worker:
        w = self.idle.pop() if self.idle else _Worker(self)
        w.job = (fn, arg)
        w.sem.release()
        return w


_POOL = _Pool()


class Scheduler:
    """The tasks of one CTA, or of the CTAs of one cluster (see the module docstring)."""

    def __init__(self):
        self.tasks: list[_Task] = []
        self.current: _Task | None = None
        self.progress = 0
        self.error: BaseException | None = None
        self.aborting = False

    # -- running -------------------------------------------------------------------
    def run(self, roots) -> None:
        """``fn(ctx)`` for every ``(ctx, fn)`` of ``roots``, interleaved at blocking points
        (the first in the caller's thread); raises the first error of any task."""
        main = None
        for k, (ctx, fn) in enumerate(roots):
            task = _Task(fn, ctx, (None, None, None), None, main=k == 0)
            main = main or task
            self.tasks.append(task)
            ctx.sched = self
        self.current = main
        self.progress += 1
        try:
            main.fn(main.ctx)
        except _Abort:
            pass
        except BaseException as e:  # noqa: BLE001 - raised below, after the others unwound
            self._fail(e)
        self._finish(main)
        if self.error is not None:
            raise self.error

    def _fail(self, e: BaseException) -> None:
        if self.error is None:
            self.error = e
        self.aborting = True

    def _thread(self, t: _Task) -> None:
        with np.errstate(all="ignore"):
            try:
                t.fn(t.ctx)
            except _Abort:
                pass
            except BaseException as e:  # noqa: BLE001 - re-raised by run() in the caller
                self._fail(e)
        self._finish(t)

    def _finish(self, t: _Task) -> None:
        """``t`` has returned: hand the baton on -- to its parent once its siblings are done,
        else to the next runnable task, else back to the caller (the main task), who waits
        here until nothing is left to run."""
        t.done = True
        self.progress += 1
        self._save(t)
        parent = t.parent
        if parent is not None:
            parent.children -= 1
        nxt = parent if parent is not None and parent.children == 0 else self._next(t)
        if t.main:
            while nxt is not None:
                self._resume(nxt)
                t.sem.acquire()
                nxt = self._next(t)
            return
        self._resume(nxt if nxt is not None else self.tasks[0])

    # -- the baton -------------------------------------------------------------------
    def _save(self, t: _Task) -> None:
        c = t.ctx
        t.state = (c.act, c.loop, c.parked)

    def _switch(self, to: _Task) -> None:
        """Hand the baton to ``to``; returns when this task gets it back."""
        me = self.current
        self._save(me)
        self._resume(to)
        me.sem.acquire()
        if self.aborting and not me.done:
            raise _Abort

    def _resume(self, to: _Task) -> None:
        self.current = to
        c = to.ctx
        if not to.done:
            c.act, c.loop, c.parked = to.state
        if to.thread is None and not to.main:
            self.progress += 1  # a task starting is progress
            to.thread = _POOL.run(self._thread, to)
        else:
            to.sem.release()

    @staticmethod
    def _runnable(t: _Task) -> bool:
        return not t.done and t.children == 0

    def _next(self, me: _Task) -> _Task | None:
        """The runnable task after ``me`` in round-robin order (None when there is none)."""
        order = self.tasks
        i = order.index(me)
        return next((t for t in order[i + 1:] + order[:i] if self._runnable(t)), None)

    # -- forks -----------------------------------------------------------------------
    def fork(self, ctx, parts) -> None:
        """Run each ``(act, fn)`` of ``parts`` as a child task of the current one (``fn(ctx)``
        with ``act`` active) and return when all have finished."""
        me = self.current
        if ctx.parked is None:  # shared by the children: breaks of their threads
            ctx.parked = np.zeros(ctx.n, bool)
        kids = [_Task(fn, ctx, (None if len(act) == ctx.n else act, ctx.loop, ctx.parked), me)
                for act, fn in parts]
        at = self.tasks.index(me) + 1
        self.tasks[at:at] = kids
        me.children = len(kids)
        self.progress += 1
        try:
            self._switch(kids[0])
        finally:
            for k in kids:
                self.tasks.remove(k)

    # -- waits -----------------------------------------------------------------------
    @mechanism("blocks")
    def block(self, poll, wait: Wait) -> bool:
        """Wait until ``poll()`` is true, running the other tasks meanwhile. False when
        nothing can make it true any more (the deadlock rule of the module docstring)."""
        if poll():
            return True
        me = self.current
        me.wait = wait
        try:
            while True:
                me.seen = self.progress
                nxt = self._next(me)
                if nxt is None or self._all_stuck(me):
                    return False
                self._switch(nxt)
                if poll():
                    self.progress += 1
                    return True
        finally:
            me.wait = None

    def _all_stuck(self, me: _Task) -> bool:
        return all(t.wait is not None and t.seen == self.progress
                   for t in self.tasks if t is not me and self._runnable(t))

    def note_progress(self) -> None:
        """A poll completed work (a drain): what other waits see may have changed."""
        self.progress += 1

    def blocked_elsewhere(self) -> list[str]:
        """Every other blocked wait, described (for a deadlock report)."""
        return [t.wait.describe() for t in self.tasks
                if t is not self.current and not t.done and t.wait is not None]
