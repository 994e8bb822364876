"""``simulate``: lower (if needed), bind the numpy arguments, run every CTA, report."""

from __future__ import annotations

import time

import numpy as np

from ..errors import LaunchError, SimulationError
from ..ir.launch import LaunchConfig
from ..ir.stmt import PrimFunc
from .compiler import Program
from .memory import CtaMemory
from .registry import EXIT_CHECKS
from .state import Ctx, SimReport


def lower_for_sim(func, target):
    """The pipeline's result to execute: a ``Lowered`` as given (it carries its target), or
    ``func`` lowered for ``target`` (sm_90a when None)."""
    from ..pipeline import Lowered, lower

    if isinstance(func, Lowered):
        if target is not None and str(target) != func.target.name:
            raise SimulationError(f"simulate() got a program lowered for {func.target} and "
                                  f"target={target!r}", func.func.span,
                                  f"drop target= (the program runs for {func.target}), or "
                                  f"lower the kernel for {target}")
        return func
    if not isinstance(func, PrimFunc):
        raise SimulationError(f"simulate() takes a @T.prim_func kernel or a Lowered program, "
                              f"not {type(func).__name__}")
    return lower(func, "sm_90a" if target is None else target)


def bind_arguments(func, arrays) -> list[np.ndarray]:
    """Check the arrays against the kernel's global buffers; return their byte views."""
    bufs = func.param_buffers()
    if len(arrays) != len(bufs):
        raise LaunchError(f"{func.name} takes {len(bufs)} array(s) "
                          f"({', '.join(b.name for b in bufs)}), got {len(arrays)}", func.span)
    return [_bind_one(b, a, func) for b, a in zip(bufs, arrays)]


def _bind_one(buf, arr, func):
    want = buf.dtype.numpy()
    if not isinstance(arr, np.ndarray):
        raise LaunchError(f"argument for {buf.name!r} must be a numpy array, got "
                          f"{type(arr).__name__}", func.span, "pass numpy arrays to simulate()")
    if arr.dtype != want:
        raise LaunchError(f"argument for {buf.name!r} has dtype {arr.dtype}, the kernel "
                          f"expects {want}", func.span, f"convert it with .astype({want})")
    if arr.size != buf.size or (arr.ndim != 1 and arr.size != np.prod(arr.shape)):
        raise LaunchError(f"argument for {buf.name!r} has shape {arr.shape} "
                          f"({arr.size} elements), the kernel expects {buf.size} elements",
                          func.span)
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        raise LaunchError(f"argument for {buf.name!r} must be a writeable C-contiguous array",
                          func.span, "pass np.ascontiguousarray(x)")
    return arr.reshape(-1).view(np.uint8)


def _grid(func, grid):
    if grid is None:
        return LaunchConfig.of(func).grid
    g = (grid,) if isinstance(grid, int) else tuple(grid)
    return tuple(g) + (1,) * (3 - len(g))


def run_program(prog: Program, globals_, grid, strict: bool, keep_tmem: bool = False
                ) -> SimReport:
    """Execute every CTA of ``grid`` one after another."""
    block = LaunchConfig.of(prog.func).block
    report = SimReport(grid=grid, block=block)
    names = [b.name for b in prog.func.param_buffers()]
    mem = CtaMemory(prog.plan, block, globals_)
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    mem.reset()
                    ctx = Ctx(block, prog.n_slots, (x, y, z), mem, report, strict, names)
                    prog.bind_launch(ctx, (x, y, z))
                    prog.body(ctx)
                    for check in EXIT_CHECKS:
                        check(ctx, prog.func.span)
                    if keep_tmem and ctx.tmem_if_used is not None:
                        ctx.stats.tmem = ctx.tmem_if_used.cells.copy()
                    report.ctas.append(ctx.stats)
    report.seconds = time.perf_counter() - t0
    return report


def simulate(func, *arrays, target=None, grid=None, strict: bool | None = None,
             keep_tmem: bool = False) -> SimReport:
    """Run a kernel on the CPU, writing results into ``arrays`` in place.

    ``func``: a ``@T.prim_func`` (lowered here for ``target``, default sm_90a) or a
    ``Lowered`` program (which runs for the target it was lowered for);
    ``arrays``: one numpy array per global buffer (dtype and size checked); ``grid``:
    override the CTA grid; ``strict``: raise the first :class:`HazardError` (default, or
    ``knobs.sim_strict`` from TILEWISE_SIM_STRICT) or record every hazard in the report
    and carry on; ``keep_tmem``: keep each CTA's tensor memory at exit in
    ``report.ctas[i].tmem`` (to check which cells a tcgen05 program wrote). Returns a
    :class:`SimReport`.
    """
    from ..knobs import knobs

    if strict is None:
        strict = knobs.sim_strict
    flat = lower_for_sim(func, target).func
    globals_ = bind_arguments(flat, arrays)
    prog = Program(flat)
    return run_program(prog, globals_, _grid(flat, grid), strict, keep_tmem)
