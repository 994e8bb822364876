"""Cooperative scheduling of divergent thread sets (warp specialisation).

The simulator runs a CTA's threads together, masked (:mod:`.state`). That serialises the
two sides of a divergent branch: the ``then`` threads run to the end of their branch
before the ``else`` threads start. A warp-specialised kernel cannot run that way: its
producer warps wait on mbarriers its consumer warps arrive on, and the other way round.

So a branch whose two sides both have threads and which can block (it contains an
mbarrier wait; :func:`blocks`) is **forked**: each side becomes a *fiber*, a thread set
with its own active mask, loop frame and parked threads, and the branch is left only when
every fiber has finished (the threads reconverge). One fiber runs at a time; a wait that
is not satisfied hands over to the next fiber (round robin) and polls again when its turn
comes back. When every live fiber has polled once with no progress in between, the other
CTAs of the cluster run (:mod:`.cluster`) until one of the fibers' waits holds; when they
cannot make it hold either, nothing can ever arrive: the wait that notices reports the
deadlock (``block`` returns False).

Each fiber is a Python thread, but only the one holding the baton runs, so execution is
deterministic and the simulator's state needs no locks. A fiber that raises stops the
others (they unwind with :class:`_Abort`) and its error is raised where the branch forked.
"""

from __future__ import annotations

import threading

# ops whose execution can wait for another thread set (they call Scheduler.block)
BLOCKING_OPS = frozenset({"ptx.mbarrier.try_wait", "ptx.mbarrier.try_wait_parity",
                          "ptx.bar.sync", "ptx.barrier.cluster.wait", "cuda.cluster_sync"})


def blocks(stmt) -> bool:
    """Whether ``stmt`` (flat IR) contains an instruction that can block on other threads."""
    from tilewise.ir.expr import Call
    from tilewise.ir.visitor import walk

    found = []
    walk(stmt, lambda n: found.append(1) if isinstance(n, Call) and n.op in BLOCKING_OPS
         else None)
    return bool(found)


class _Abort(BaseException):
    """Unwinds a fiber after another fiber raised."""


class _Fiber:
    __slots__ = ("fn", "state", "sem", "thread", "parent", "children", "done", "error",
                 "waiting", "poll")

    def __init__(self, fn, state, parent):
        self.fn = fn
        self.state = state  # (act, loop, parked) while not running
        self.sem = threading.Semaphore(0)
        self.thread = None
        self.parent = parent
        self.children = 0  # live children it is joining
        self.done = False
        self.error = None
        self.waiting = None  # what it is blocked on, for deadlock reports
        self.poll = None  # while blocked: whether its wait is satisfied now


class Scheduler:
    """The fibers of one CTA. ``fork`` runs branches as fibers; ``block`` waits."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.current = _Fiber(None, None, None)  # the CTA's own thread
        self.fibers = [self.current]
        self.stalls = 0  # consecutive turns that made no progress
        self.aborting = False
        self.error = None  # the first error a fiber raised (nested forks unwind with _Abort)

    # -- the state a fiber owns -----------------------------------------------------
    def _save(self, f):
        c = self.ctx
        f.state = (c.act, c.loop, c.parked)

    def _restore(self, f):
        self.ctx.act, self.ctx.loop, self.ctx.parked = f.state

    def _switch(self, to) -> None:
        """Hand the baton to ``to``; returns when this fiber gets it back."""
        me = self.current
        self._save(me)
        self._resume(to)
        me.sem.acquire()
        if self.aborting and me.fn is not None:
            raise _Abort

    def _resume(self, to) -> None:
        self.current = to
        self._restore(to)
        if to.thread is None and to.fn is not None:
            to.thread = threading.Thread(target=self._run, args=(to,), daemon=True)
            to.thread.start()
        else:
            to.sem.release()

    def _live(self):
        """The fibers that can run (not finished, not joining their children)."""
        return [f for f in self.fibers if not f.done and f.children == 0]

    def _next(self, me):
        """The live fiber after ``me`` in round-robin order (None when ``me`` is alone)."""
        order = self.fibers
        i = order.index(me)
        return next((f for f in order[i + 1:] + order[:i]
                     if not f.done and f.children == 0), None)

    # -- fibers ------------------------------------------------------------------------
    def fork(self, parts) -> None:
        """Run each ``(act, fn)`` of ``parts`` as a fiber (``fn(ctx)`` with ``act`` active)
        and return when all have finished."""
        ctx, me = self.ctx, self.current
        if ctx.parked is None:  # shared by the fibers: breaks of their threads
            import numpy as np
            ctx.parked = np.zeros(ctx.n, bool)
        kids = [_Fiber(fn, (None if len(act) == ctx.n else act, ctx.loop, ctx.parked), me)
                for act, fn in parts]
        at = self.fibers.index(me) + 1
        self.fibers[at:at] = kids
        me.children = len(kids)
        self.stalls = 0
        self._switch(kids[0])
        for k in kids:
            self.fibers.remove(k)
        err = next((k.error for k in kids if k.error is not None), None) or self.error
        if err is not None:  # aborting stays set: enclosing fibers unwind as they resume
            raise err

    def _run(self, f) -> None:
        try:
            f.fn(self.ctx)
        except _Abort:
            pass
        except BaseException as e:  # noqa: BLE001 - re-raised where the branch forked
            f.error = e
            if self.error is None:  # an enclosing fiber unwinds with _Abort: keep it here
                self.error = e
            self.aborting = True
        f.done = True
        self.stalls = 0
        parent = f.parent
        parent.children -= 1
        self._save(f)
        nxt = parent if parent.children == 0 else self._next(f)
        self._resume(nxt)

    def block(self, poll, what: str = "") -> bool:
        """Wait until ``poll()`` is true, running the other fibers meanwhile (and, in a
        cluster, once every fiber is stuck, the other CTAs). False when nothing can make
        progress (a deadlock: every fiber polled in vain since the last progress).
        ``what`` (a callable returning a string) describes the wait for
        :meth:`blocked_elsewhere`."""
        if poll():
            return True
        me = self.current
        me.waiting, me.poll = what, poll
        try:
            while True:
                nxt = self._next(me)
                stuck = nxt is None or self.stalls > 2 * len(self._live())
                if stuck:
                    self.stalls = 0
                    if not self._other_ctas():
                        return False
                    if poll():
                        return True
                    if nxt is None:
                        continue
                self.stalls += 1
                self._switch(nxt)
                if poll():
                    self.stalls = 0
                    return True
        finally:
            me.waiting = me.poll = None

    def _other_ctas(self) -> bool:
        """Every fiber of this CTA is blocked: let the other CTAs of the cluster run until
        one of the fibers' waits is satisfied. False without a cluster, or when nothing
        anywhere can progress."""
        cluster = self.ctx.cluster
        if cluster is None:
            return False
        polls = [f.poll for f in self._live() if f.poll is not None]
        return cluster.block(self.ctx, lambda: any(p() for p in polls))

    def blocked_elsewhere(self) -> list[str]:
        """What the other fibers are blocked on (for a deadlock report)."""
        return [f.waiting for f in self._live() if f is not self.current and f.waiting]
