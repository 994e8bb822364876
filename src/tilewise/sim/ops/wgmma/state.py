"""The asynchronous state of wgmma (PTX ISA §9.7.15.6): the part of the async core
(``ctx.asyncs.part("wgmma")``) that the ``wgmma`` ops and the register/shared-memory checks
use.

A ``wgmma.mma_async`` is computed when it is issued (it reads its shared operands then and
writes its accumulators in the same order the hardware chains them), but until a
``wgmma.wait_group`` retires its group:

* its accumulator registers are *in flight*: a read or write of them by any other
  instruction is a hazard (the hardware may not have written them yet); so are the A
  registers of a wgmma that takes A from registers (``mma_async.rs``: the PTX ISA makes
  any access to them before the wait undefined — the hardware may still be reading them);
* its shared-memory operands are *being read*: a write to them is a hazard.

A warpgroup that *releases* shared memory a pending wgmma reads — it arrives on an mbarrier
before the ``wait_group`` that retires the wgmma (a pipeline's "empty" barrier, arrived on
one step early) — lets a producer that waits on that mbarrier refill the buffer while the
tensor cores still read it. The simulator runs the consumer on to its wait before the
producer's turn, so the overwrite itself is never seen; instead the arrive is remembered
with the wgmma's bytes, and a later write of those bytes by a thread whose last completed
mbarrier wait was on that same mbarrier is reported at the arrive ("releases ... early").

``wgmma.fence`` orders the warpgroup's earlier register accesses before the next
``mma_async``: an accumulator or A register written by ordinary code since the thread's last
fence is a hazard ("missing wgmma.fence"). Groups are counted per warpgroup, like the instructions
(``commit_group`` closes the open group, ``wait_group N`` retires every group but the N
most recent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....ir.launch import WARPGROUP
from ...async_core import Part, async_part
from ...memory import LOCAL, SHARED, SPACE_SHIFT
from ...values import fit


@dataclass
class _Op:
    wg: int
    group: int
    tids: np.ndarray
    regs: np.ndarray  # (threads, bytes) local byte offsets of the accumulators (and A)
    smem: tuple  # the shared byte offsets read: arrays, each of unique offsets
    span: object
    cells: tuple  # an index of ``inflight`` for (tids, regs): slices when both are ranges
    a_bytes: int = 0  # the last a_bytes columns of regs are A registers (mma_async.rs)
    released: tuple | None = None  # (mbarrier, span) of an arrive while it was pending

    @property
    def smem_bytes(self) -> np.ndarray:
        return np.concatenate(self.smem) if len(self.smem) else np.zeros(0, np.int64)


def _cells(tids: np.ndarray, regs: np.ndarray) -> tuple:
    """An index of the (thread, local byte) cells ``tids`` x ``regs``: two slices when the
    threads are consecutive and every thread's registers the same consecutive bytes (a
    warpgroup's accumulator), else the fancy index."""
    if len(tids) and regs.shape[1] and regs.strides[0] == 0:
        c = regs[0]
        c0, t0 = int(c[0]), int(tids[0])
        if int(tids[-1]) - t0 == len(tids) - 1 and (c == np.arange(c0, c0 + len(c))).all():
            return slice(t0, t0 + len(tids)), slice(c0, c0 + len(c))
    return np.broadcast_to(tids[:, None], regs.shape), regs


@async_part("wgmma", order=2)
class WgmmaState(Part):
    watches_registers = True

    def __init__(self, core):
        super().__init__(core)
        ctx = self.ctx
        n, local = ctx.n, ctx.mem.local.shape[1]
        groups = -(-n // WARPGROUP)
        self.committed = np.zeros(groups, np.int64)
        self.fenced = np.zeros(groups, bool)  # the warpgroup executed a wgmma.fence
        self.retired = np.zeros(groups, np.int64)
        self.ops: list[_Op] = []
        self.inflight = np.zeros((n, local), bool)
        self.dirty = np.zeros((n, local), bool)
        self.reading = np.zeros(ctx.mem.shared.size, np.int32)
        self.n_reading = 0
        self.wait_spans: dict[int, tuple] = {}
        self.released_early: list[tuple] = []  # (bytes, mbarrier, arrive span, op span)
        self.released_bytes = np.zeros(ctx.mem.shared.size, bool)  # any record's bytes
        self.last_wait: dict[int, int] = {}  # thread -> mbarrier of its last completed wait

    # -------------------------------------------------------------- the instructions
    def fence(self, tids) -> None:
        self.dirty[tids] = False
        self.fenced[np.unique(tids // WARPGROUP)] = True

    def issue(self, wg: int, tids, regs: np.ndarray, smem: tuple, span,
              a_regs: np.ndarray | None = None) -> None:
        """Check and record one warpgroup's mma_async (``regs``: local byte offsets of
        its accumulator registers per thread; ``smem``: arrays of unique shared offsets;
        ``a_regs``: the local byte offsets of its A operand when A comes from registers)."""
        ctx = self.ctx
        n_a = 0 if a_regs is None else a_regs.shape[1]
        if n_a:
            regs = np.concatenate([regs, a_regs], axis=1)
        cells = _cells(tids, regs)
        if ctx.checks.regs and self.dirty[cells].any():
            self._unfenced(wg, tids, regs, n_a, span)
        self.inflight[cells] = True
        for offs in smem:  # unique within each: a plain add
            self.reading[offs] += 1
            self.n_reading += len(offs)
        self.ops.append(_Op(wg, int(self.committed[wg]), tids.copy(), regs, smem, span, cells,
                            n_a))

    def _unfenced(self, wg: int, tids, regs, n_a: int, span) -> None:
        dirty = self.dirty[np.broadcast_to(tids[:, None], regs.shape), regs]
        k, j = np.argwhere(dirty)[0]
        what = "A operand registers" if j >= regs.shape[1] - n_a else "accumulator registers"
        since = ("since the warpgroup's last wgmma.fence" if self.fenced[wg] else
                 "and the warpgroup has executed no wgmma.fence")
        self.ctx.hazard(f"wgmma.mma_async uses {what} written by other instructions {since}",
                        span, f"call T.ptx.wgmma.fence() after writing the {what.split()[0]} "
                        "registers (zeroing an accumulator, casting P) and before the "
                        "wgmma.mma_async that reads them",
                        tid=int(tids[k]), addr=(LOCAL << SPACE_SHIFT) + int(regs[k, j]))

    def commit(self, wgs) -> None:
        self.committed[wgs] += 1

    def wait(self, wgs, n: int, span) -> None:
        target = self.committed[wgs] - n
        self.retired[wgs] = np.maximum(self.retired[wgs], target)
        for w in np.atleast_1d(wgs).tolist():
            self.wait_spans[w] = (n, span)
        keep = []
        for op in self.ops:
            if op.group < self.retired[op.wg]:
                self.inflight[op.cells] = False
                for offs in op.smem:
                    self.reading[offs] -= 1
                    self.n_reading -= len(offs)
                if op.released is not None:
                    smem = op.smem_bytes
                    self.released_early.append((smem, *op.released, op.span))
                    self.released_bytes[smem] = True
            else:
                keep.append(op)
        self.ops = keep

    # -------------------------------------------------------------- the core's hooks
    def arrived(self, tid: int, addr: int, span) -> None:
        """Thread ``tid`` arrives on the mbarrier at ``addr``: the pending wgmmas of its
        warpgroup that read shared memory are released early if that mbarrier guards their
        bytes (which a later write by a thread that waited on it shows: :meth:`check_write`)."""
        for op in self.ops:
            if op.wg == tid // WARPGROUP and op.released is None and any(
                    len(x) for x in op.smem):
                op.released = (addr, span)

    def observe(self, tids, addrs, cluster: bool = False) -> None:
        """Threads ``tids`` waited on the mbarriers ``addrs``: each thread's last one."""
        for t, a in zip(np.atleast_1d(tids).tolist(), np.atleast_1d(addrs).tolist()):
            self.last_wait[int(t)] = int(a)

    # -------------------------------------------------------------- checks
    def register_access(self, tids, offs, nbytes: int, span, write: bool) -> None:
        """An ordinary read or write of local bytes: a hazard when a pending wgmma owns
        them; a write also makes them dirty until the next wgmma.fence."""
        offs = fit(offs, tids.shape, np.int64)
        cols = offs[:, None] + np.arange(nbytes)
        rows = np.broadcast_to(tids[:, None], cols.shape)
        if write:
            self.dirty[rows, cols] = True
        if self.ops and self.inflight[rows, cols].any():
            k = int(np.argmax(self.inflight[rows, cols].any(axis=1)))
            op, is_a = self._owner(int(tids[k]), cols[k])
            verb = "writes" if write else "reads"
            what = "the A operand registers" if is_a else "accumulator registers"
            use = "reusing its A registers" if is_a else "using the accumulators"
            self.ctx.hazard(f"{verb} {what} of a wgmma.mma_async (issued at {op.span}) "
                            f"before a wgmma.wait_group retires it: {self._why(op)}", span,
                            "call T.ptx.wgmma.commit_group() and T.ptx.wgmma.wait_group(N) "
                            f"that retires it before {use}", tid=int(tids[k]))

    def check_write(self, span_b, tids, span) -> None:
        if self.released_early and self.released_bytes[span_b].any():
            self._check_released(span_b, tids, span)
        if self.n_reading and np.any(self.reading[span_b]):
            k, j = np.argwhere(self.reading[span_b] > 0)[0]
            off = int(span_b[k, j])
            op = next(o for o in self.ops if off in set(o.smem_bytes.tolist()))
            self.ctx.hazard(f"overwrites shared memory that a wgmma.mma_async (issued at "
                            f"{op.span}) still reads: {self._why(op)}", span,
                            "wait for the wgmma (T.ptx.wgmma.wait_group) before refilling "
                            "its operand buffer", tid=int(tids[k]),
                            addr=(SHARED << SPACE_SHIFT) + off)

    def _check_released(self, span_b, tids, span) -> None:
        """A write of bytes a retired wgmma read after its warpgroup released them early."""
        written = np.unique(np.asarray(span_b).ravel())
        keep = []
        for i, rec in enumerate(self.released_early):
            smem, mbar, arrive_span, op_span = rec
            hit = np.isin(written, smem)
            if not hit.any():
                keep.append(rec)
                continue
            writers = [int(t) for t in np.atleast_1d(tids).tolist()]
            if any(self.last_wait.get(t) == mbar for t in writers if t >= 0):
                self._forget(keep + self.released_early[i + 1:])
                self.ctx.hazard(
                    "releases shared memory that a wgmma.mma_async (issued at "
                    f"{op_span}) still reads: this mbarrier arrive comes before the "
                    "wgmma.wait_group that retires the wgmma, and a thread that waited on "
                    f"the mbarrier then wrote the bytes (at {span})", arrive_span,
                    "arrive on the buffer's 'empty' mbarrier only after "
                    "T.ptx.wgmma.wait_group(N) has retired every wgmma reading it",
                    tid=writers[0], addr=(SHARED << SPACE_SHIFT) + int(written[hit][0]))
                return
        self._forget(keep)

    def _forget(self, keep: list) -> None:
        """Keep only the records ``keep`` (a write of the others' bytes ended them)."""
        self.released_early = keep
        self.released_bytes[:] = False
        for rec in keep:
            self.released_bytes[rec[0]] = True

    def at_exit(self) -> None:
        for op in self.ops:
            self.ctx.hazard(f"the CTA exits while a wgmma.mma_async is pending: "
                            f"{self._why(op)}", op.span, "end with T.ptx.wgmma.commit_group() "
                            "and T.ptx.wgmma.wait_group(0)", tid=int(op.tids[0]))
            return

    def _owner(self, tid: int, cols) -> tuple[_Op, bool]:
        """The pending op holding local bytes ``cols`` of thread ``tid``, and whether they
        are its A registers."""
        for op in self.ops:
            k = np.nonzero(op.tids == tid)[0]
            if len(k) and np.isin(cols, op.regs[k[0]]).any():
                a = op.regs[k[0], op.regs.shape[1] - op.a_bytes:] if op.a_bytes else ()
                return op, bool(op.a_bytes) and bool(np.isin(cols, a).any())
        return self.ops[0], False

    def _why(self, op: _Op) -> str:
        if op.group >= self.committed[op.wg]:
            return "its group was never committed (missing wgmma.commit_group)"
        last = self.wait_spans.get(op.wg)
        if last is not None:
            n, wspan = last
            return (f"wgmma.wait_group({n}) at {wspan} leaves up to {n} group(s) pending and "
                    "this one is among them")
        return "no wgmma.wait_group has retired it"


def wgmma_of(ctx) -> WgmmaState:
    """The CTA's wgmma state (made on first use)."""
    return ctx.asyncs.part("wgmma")
