"""Performance hazards of a simulated run: ``tw.simulate(k, ..., perf=True).perf``.

The simulator sees every memory instruction a warp issues, with every lane's address, so it
can count what the hardware's memory pipeline will do with them (docs/simulator.md,
"Performance counters"):

* **shared-memory bank conflicts**, per access site. Shared memory has 32 banks of 4
  bytes; a warp's request is served in *wavefronts*, each reading or writing at most one
  4-byte word per bank (lanes reading the same word share it: a broadcast). A request of
  4-byte or narrower accesses is one pass over the warp; 8-byte accesses are processed per
  half-warp (16 lanes x 8 bytes = 128 bytes), 16-byte ones per quarter-warp (8 lanes), so
  their conflict-free cost is 2 and 4 wavefronts. Per pass, the wavefronts are the most
  distinct words any one bank must serve (its "ways"); the conflicts are the wavefronts
  beyond one per pass — what Nsight Compute counts as
  ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}``. ``ldmatrix`` /
  ``stmatrix`` are 16-byte row accesses of the lanes that give addresses, 8 rows a pass.
* **global coalescing**, per access site: the 32-byte sectors each warp request touches
  against the fewest that could hold its bytes (``l1tex__t_sectors_pipe_lsu_mem_global_op_*``
  over ``l1tex__t_requests_...``); ``cp.async`` counts its global reads.
* **dispatch warnings**: tile calls that fell back to a slow variant (the scalar copy run
  by one thread) or otherwise warned.

Counting is an observer the compiled program calls at each load, store and matrix / vector
move of shared or global memory (:meth:`PerfObserver.wrap_access`, :meth:`wrap_call`); a run
without ``perf=True`` installs none and pays nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..ir.launch import WARP
from .memory import GLOBAL0, SHARED, offset_of, space_of

BANKS, BANK_BYTES, SECTOR = 32, 4, 32


@dataclass
class SharedSite:
    """Shared accesses of one instruction at one line: warp ``requests``, ``wavefronts``
    served, the conflict-free ``ideal`` and the worst ``ways`` of one pass."""

    where: str
    op: str
    buffer: str
    width: int  # bytes per lane
    requests: int = 0
    wavefronts: int = 0
    ideal: int = 0
    ways: int = 0

    @property
    def conflicts(self) -> int:
        """Wavefronts beyond the conflict-free count (Nsight Compute's bank conflicts)."""
        return self.wavefronts - self.ideal

    def line(self) -> str:
        verdict = (f"{self.conflicts} conflicts ({self.ways}-way)" if self.conflicts
                   else "conflict-free")
        return (f"{_short(self.where)}  {self.op} {self.buffer} ({self.width} B/lane): "
                f"{self.requests} requests, {self.wavefronts} wavefronts "
                f"(ideal {self.ideal}): {verdict}")


@dataclass
class GlobalSite:
    """Global accesses of one instruction at one line: warp ``requests``, the 32-byte
    ``sectors`` they touched and the ``ideal`` (bytes asked for / 32, per request)."""

    where: str
    op: str
    buffer: str
    width: int
    requests: int = 0
    sectors: int = 0
    ideal: int = 0

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def coalesced(self) -> bool:
        return self.sectors <= self.ideal

    def line(self) -> str:
        verdict = "coalesced" if self.coalesced else (
            f"uncoalesced: {self.sectors / max(self.ideal, 1):.1f}x the sectors needed")
        return (f"{_short(self.where)}  {self.op} {self.buffer} ({self.width} B/lane): "
                f"{self.requests} requests, {self.sectors} sectors "
                f"({self.sectors_per_request:.1f} per request, ideal "
                f"{self.ideal / max(self.requests, 1):.1f}): {verdict}")


@dataclass
class PerfReport:
    """The counters of a run: ``shared`` and ``global_`` sites in program order, and the
    dispatch ``warnings`` (``(where, call, text)``)."""

    shared: list = field(default_factory=list)
    global_: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def at(self, line: int, op: str | None = None) -> list:
        """The sites of source line ``line`` (shared and global), of ``op`` when given."""
        return [s for s in self.shared + self.global_
                if s.where.rsplit(":", 2)[-2] == str(line) and op in (None, s.op)]

    def bank_conflicts(self, op: str | None = None) -> int:
        """Bank conflicts (extra wavefronts) of every shared site, of ``op`` when given."""
        return sum(s.conflicts for s in self.shared if op in (None, s.op))

    def sectors(self, op: str = "ld") -> tuple[int, int]:
        """(sectors, requests) of every global site of ``op``."""
        sites = [s for s in self.global_ if s.op == op]
        return sum(s.sectors for s in sites), sum(s.requests for s in sites)

    def __str__(self) -> str:
        out = ["shared memory (32 banks x 4 bytes; wavefronts per warp request):"]
        out += ["  " + s.line() for s in self.shared] or ["  no accesses"]
        if any(s.conflicts for s in self.shared):
            out.append("  hint: pad each row by one 4-byte word, or swizzle the tile "
                       "(TileLayout(...).swizzle), so that a warp's lanes reach different "
                       "banks")
        out.append("global memory (32-byte sectors per warp request):")
        out += ["  " + s.line() for s in self.global_] or ["  no accesses"]
        if not all(s.coalesced for s in self.global_):
            out.append("  hint: let consecutive lanes access consecutive addresses (stage a "
                       "transpose through shared memory)")
        if self.warnings:
            out.append("dispatch warnings:")
            out += [f"  {where}: {call}: {text}" for where, call, text in self.warnings]
        return "\n".join(out)


class PerfObserver:
    """Collects the counters while a program runs; :meth:`report` makes the PerfReport."""

    def __init__(self):
        self.sites: dict = {}

    # ---------------------------------------------------------------- hooks
    def wrap_access(self, fn, plan, buf, span, op: str):
        """``fn`` (a compiled load ``(ctx, idx)`` or store ``(ctx, idx, vals)`` of ``buf``),
        counting its shared / global accesses first; registers are not observed."""
        place = plan.of(buf)
        if place.space != SHARED and place.space < GLOBAL0:
            return fn
        isz = buf.dtype.bytes
        count = self._counter(place.space, span, op, buf.name, isz)

        def observed(ctx, idx, *vals):
            tids = ctx.active()
            offs = place.base + np.broadcast_to(np.asarray(idx, np.int64), tids.shape) * isz
            count(tids, offs)
            return fn(ctx, idx, *vals)

        return observed

    def wrap_call(self, fn, site):
        """``fn`` (an instruction's semantics), counting the memory accesses of the vector
        moves, cp.async and ldmatrix / stmatrix first; other instructions are returned
        as they are."""
        name = site.call.op
        if name == "ptx.ld_st":
            return self._vector_move(fn, site)
        if name == "ptx.cp_async":
            return self._cp_async(fn, site)
        if name in ("ptx.ldmatrix", "ptx.stmatrix"):
            return self._matrix(fn, site, "ldmatrix" if name == "ptx.ldmatrix" else "stmatrix")
        return fn

    def _vector_move(self, fn, site):
        names = [_operand_name(a) for a in site.call.args[:2]]

        def observed(ctx, s, args):
            dst, src, nbytes = args
            self._addresses(ctx, site.span, "ld", names[1], src, int(nbytes))
            self._addresses(ctx, site.span, "st", names[0], dst, int(nbytes))
            return fn(ctx, s, args)

        return observed

    def _cp_async(self, fn, site):
        name = _operand_name(site.call.args[1])

        def observed(ctx, s, args):
            self._addresses(ctx, site.span, "cp.async", name, args[1], int(args[2]))
            return fn(ctx, s, args)

        return observed

    def _matrix(self, fn, site, op):
        name = _operand_name(site.call.args[0])

        def observed(ctx, s, args):
            tids = ctx.active()
            rows = (tids % WARP) < 8 * int(args[1])  # the lanes that give row addresses
            addrs = np.broadcast_to(np.asarray(args[0], np.int64), tids.shape)
            self._counter(SHARED, site.span, op, name, 16)(tids[rows],
                                                           offset_of(addrs[rows]))
            return fn(ctx, s, args)

        return observed

    def _addresses(self, ctx, span, op, name, addrs, nbytes):
        tids = ctx.active()
        addrs = np.broadcast_to(np.asarray(addrs, np.int64), tids.shape)
        spaces = space_of(addrs)
        for sp in np.unique(spaces).tolist():
            if sp == SHARED or sp >= GLOBAL0:
                sel = spaces == sp
                self._counter(sp, span, op, name, nbytes)(tids[sel], offset_of(addrs[sel]))

    # ---------------------------------------------------------------- counting
    def _counter(self, space: int, span, op: str, name: str, width: int):
        kind = "shared" if space == SHARED else "global"
        where = f"{span.file}:{span.line}:{span.col}" if span is not None else "?"
        key = (kind, where, op, name, width)
        site = self.sites.get(key)
        if site is None:
            cls = SharedSite if kind == "shared" else GlobalSite
            site = self.sites[key] = cls(where, op, name, width)
        tally = _bank_tally if kind == "shared" else _sector_tally
        return lambda tids, offs: tally(site, tids, offs, width)

    def report(self, dispatch_log=()) -> PerfReport:
        """The sites that ran, in source order, and the warnings of ``dispatch_log``."""
        out = PerfReport()
        for (kind, *_), site in sorted(self.sites.items(), key=lambda kv: _order(kv[1])):
            if site.requests:
                (out.shared if kind == "shared" else out.global_).append(site)
        for d in dispatch_log:
            where = f"{d.span.file}:{d.span.line}" if d.span else "?"
            out.warnings += [(where, d.call, note) for note in d.notes]
        return out


def _order(site) -> tuple:
    file, line, col = site.where.rsplit(":", 2) if site.where.count(":") >= 2 else (
        site.where, "0", "0")
    return file, int(line), int(col), site.op


def _short(where: str) -> str:
    """``file.py:12:4`` for a place in ``/some/folder/file.py``."""
    return os.path.basename(where)


def _operand_name(arg) -> str:
    buf = getattr(arg, "buffer", None)
    return buf.name if buf is not None else "?"


def passes(tids: np.ndarray, width: int) -> np.ndarray:
    """The pass of the shared-memory pipeline each lane's access falls in: the whole warp
    for accesses of up to 4 bytes, a half-warp for 8, a quarter-warp for 16."""
    lanes = WARP if width <= BANK_BYTES else max(WARP * BANK_BYTES // width, 1)
    return np.asarray(tids, np.int64) // lanes


def bank_ways(tids, offs, width) -> np.ndarray:
    """Per pass (of :func:`passes`) that has active lanes, the wavefronts it needs: the
    most distinct 4-byte words one bank serves (1 when conflict-free)."""
    nw = max(width // BANK_BYTES, 1)
    words = (np.asarray(offs, np.int64) // BANK_BYTES)[:, None] + np.arange(nw)
    grp = np.repeat(passes(tids, width), nw)
    pairs = np.unique((grp << 32) | words.ravel())  # distinct (pass, word)
    per_bank, counts = np.unique((pairs >> 32) * BANKS + (pairs & 0xFFFFFFFF) % BANKS,
                                 return_counts=True)
    grp_of = per_bank // BANKS
    starts = np.flatnonzero(np.r_[True, grp_of[1:] != grp_of[:-1]])
    return np.maximum.reduceat(counts, starts)


def _bank_tally(site: SharedSite, tids, offs, width) -> None:
    if not len(tids):
        return
    ways = bank_ways(tids, offs, width)
    site.requests += len(np.unique(np.asarray(tids) // WARP))
    site.wavefronts += int(ways.sum())
    site.ideal += len(ways)
    site.ways = max(site.ways, int(ways.max()))


def sector_counts(tids, offs, width) -> tuple[int, int, int]:
    """(requests, sectors touched, fewest sectors that hold the bytes) of one instruction
    executed by ``tids`` at byte offsets ``offs``: per warp, the distinct 32-byte sectors
    against ceil(distinct bytes / 32). Accesses are naturally aligned, so each lies in one
    sector."""
    warp = np.asarray(tids, np.int64) // WARP
    offs = np.asarray(offs, np.int64)
    sectors = len(np.unique((warp << 40) | (offs // SECTOR)))
    elems = np.unique((warp << 40) | offs) >> 40  # the warp of each distinct access
    wids, n = np.unique(elems, return_counts=True)
    ideal = int(np.sum(-(-(n * width) // SECTOR)))
    return len(wids), sectors, ideal


def _sector_tally(site: GlobalSite, tids, offs, width) -> None:
    if not len(tids):
        return
    requests, sectors, ideal = sector_counts(tids, offs, width)
    site.requests += requests
    site.sectors += sectors
    site.ideal += ideal
