"""``simulate``: lower (if needed), bind the numpy arguments, run every CTA, report."""

from __future__ import annotations

import time
import warnings
import weakref
from dataclasses import dataclass

import numpy as np

from ..errors import LaunchError, SimulationError, SimulationWarning, api_boundary
from ..ir import signature as sig
from ..ir.launch import LaunchConfig, cluster_rank
from ..ir.stmt import PrimFunc
from .cluster import Cluster
from .compiler import Program
from .memory import CtaMemory
from .perf import PerfObserver
from .races import GlobalRaces
from .registry import EXIT_CHECKS
from .scheduler import Scheduler
from . import values as V
from .state import Ctx, SimReport
from .ops.bulk.tensormap import bind_tensor_maps


def lower_for_sim(func, target):
    """The pipeline's result to execute: a ``Lowered`` as given (it carries its target), or
    ``func`` lowered for ``target`` (sm_90a when None)."""
    from ..pipeline import Lowered, lower

    from ..ir.stmt import as_prim_func

    func = as_prim_func(func)  # a tilewise.autotune kernel: its heuristic configuration
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


def bind_arguments(func, args):
    """Check the arguments against the kernel's parameters (arrays for its global buffers,
    scalars for its scalar parameters, in order); returns ``(byte views of the arrays,
    {id(param or size): value}, Binding)``."""
    params = sig.declared_params(func)
    if len(args) != len(params):
        raise LaunchError(f"{func.name} takes {len(params)} argument(s) "
                          f"({', '.join(p.name for p in params)}), got {len(args)}", func.span)
    by_param = {id(p): b for p, b in func.buffer_map}
    arrays, values = [], {}
    for p, a in zip(params, args):
        buf = by_param.get(id(p))
        if buf is not None:
            arrays.append((buf, _check_array(buf, a, func)))
        elif p.dtype.kind == "handle":
            raise LaunchError(f"parameter {p.name!r} is a handle no T.match_buffer uses",
                              func.span, "match it to a buffer or drop the parameter")
        else:
            values[id(p)] = _at(func, sig.check_scalar, p, a)
    binding = _at(func, sig.bind_sizes, func,
                  [(b, a.shape, _elem_strides(a)) for b, a in arrays])
    for v in func.attr("size_vars", ()):
        values[id(v)] = V.np_dtype(v.dtype).type(binding.sizes[id(v)])
    views = [_memory(b, a, binding, func) for b, a in arrays]
    return views, values, binding


def _at(func, fn, *args):
    """``fn(*args)``; a LaunchError without a place of its own gets the kernel's."""
    try:
        return fn(*args)
    except LaunchError as e:
        raise e.with_span(e.span or func.span) from None


def _elem_strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def _check_array(buf, arr, func):
    want = buf.dtype.numpy()
    if not isinstance(arr, np.ndarray):
        raise LaunchError(f"argument for {buf.name!r} must be a numpy array, got "
                          f"{type(arr).__name__}", func.span, "pass numpy arrays to simulate()")
    if arr.dtype != want:
        raise LaunchError(f"argument for {buf.name!r} has dtype {arr.dtype}, the kernel "
                          f"expects {want}", func.span, f"convert it with .astype({want})")
    if not arr.flags.writeable:
        raise LaunchError(f"argument for {buf.name!r} must be writeable", func.span,
                          "pass a copy: np.array(x)")
    if buf.symbolic and arr.ndim != len(buf.shape):
        raise LaunchError(f"argument for {buf.name!r} has {arr.ndim} dimension(s), the kernel "
                          f"expects {len(buf.shape)} {sig.describe_shape(buf.shape)}",
                          func.span)
    return arr


def _memory(buf, arr, binding, func) -> np.ndarray:
    """The bytes the kernel addresses for ``buf``: the array's own, from its first element."""
    if not buf.symbolic:
        shape = tuple(int(n) for n in buf.shape)
        if tuple(arr.shape) != shape:  # the GPU launcher's rule (runtime/args.py)
            raise LaunchError(f"argument for {buf.name!r} has shape {arr.shape}, the kernel "
                              f"expects {shape}", func.span,
                              f"pass an array of shape {shape}"
                              + (f" (x.reshape{shape} of a contiguous x)"
                                 if arr.size == buf.size else ""))
        if not arr.flags.c_contiguous:
            raise LaunchError(f"argument for {buf.name!r} must be a C-contiguous array",
                              func.span, "pass np.ascontiguousarray(x)")
        return arr.reshape(-1).view(np.uint8)
    shape = sig.expected_shape(buf, binding)
    if tuple(arr.shape) != shape:
        raise LaunchError(f"argument for {buf.name!r} has shape {arr.shape}, the kernel expects "
                          f"{sig.describe_shape(buf.shape)} = {shape}", func.span)
    strides = sig.expected_strides(buf, binding)
    if any(n > 1 and s != w for n, s, w in zip(shape, _elem_strides(arr), strides)):
        raise LaunchError(f"argument for {buf.name!r} has strides {_elem_strides(arr)} "
                          f"(elements), the kernel expects {strides}", func.span,
                          "pass np.ascontiguousarray(x), or declare strides= in "
                          "T.match_buffer")
    n = sig.storage_elems(buf, binding)
    # as unsigned words of the element's size: numpy's as_strided cannot rebuild an array of
    # an ml_dtypes type (float8_e5m2's '<f1' is "not understood")
    words = arr.view(np.dtype(f"u{arr.itemsize}"))
    flat = np.lib.stride_tricks.as_strided(words, (n,), (arr.itemsize,), writeable=True)
    return flat.view(np.uint8)


def _grid(func, grid, binding):
    if grid is None:
        return binding.grid(func)
    return check_grid(grid, func)


def check_grid(grid, func) -> tuple:
    """``grid=`` of simulate: an int or 1 to 3 ints, each >= 1 -> (x, y, z)."""
    import numbers

    g = (grid,) if isinstance(grid, numbers.Integral) else grid
    ok = (isinstance(g, (tuple, list)) and 1 <= len(g) <= 3
          and all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in g))
    if not ok:
        raise LaunchError(f"grid={grid!r} is not a grid", func.span,
                          "pass CTAs per dimension: an int or a tuple of 1 to 3 ints, e.g. "
                          "grid=(8, 4)")
    if any(int(n) < 1 for n in g):
        raise LaunchError(f"grid={grid!r}: every dimension needs at least one CTA", func.span,
                          "use extents >= 1 (a launch of no CTAs does nothing)")
    return tuple(int(n) for n in g) + (1,) * (3 - len(g))


@dataclass
class SimOptions:
    """How one launch is simulated (the keywords of :func:`simulate`)."""

    strict: bool = True
    strict_races: bool = False
    checks: str = "full"
    keep_tmem: bool = False
    outputs: tuple = ()  # indices of the global arguments unwritten at launch


class _Run:
    """One launch: the program, its memories and the report."""

    def __init__(self, prog: Program, globals_, grid, opts: SimOptions, values):
        cfg = LaunchConfig.of(prog.func)
        self.prog, self.globals, self.grid = prog, globals_, grid
        self.block, self.cluster = cfg.block, cfg.cluster
        self.opts, self.values = opts, values or {}
        self.strict, self.keep_tmem = opts.strict, opts.keep_tmem
        self.report = SimReport(grid=grid, block=self.block)
        self.names = [b.name for b in prog.func.param_buffers()]
        # one race shadow per launch; a cluster's CTAs are one unit of it (sim/races.py)
        self.races = GlobalRaces(globals_, self.block, int(np.prod(self.cluster)),
                                 strict_same=opts.strict_races, checks=prog.checks,
                                 outputs=opts.outputs)

    def memory(self, rank: int = 0) -> CtaMemory:
        mem = CtaMemory(self.prog.plan, self.block, self.globals)
        mem.races, mem.rank = self.races, rank
        return mem

    def ctx(self, cta, mem) -> Ctx:
        ctx = Ctx(self.block, self.prog.n_slots, cta, mem, self.report, self.strict, self.names)
        ctx.checks = self.prog.checks
        if self.prog.plan.wgmma:  # register writes before the first wgmma op count too
            ctx.asyncs.part("wgmma")
        self.prog.bind_launch(ctx, cta, self.values)
        return ctx

    def execute(self, ctx) -> None:
        self.prog.body(ctx)
        for check in EXIT_CHECKS:
            check(ctx, self.prog.func.span)
        if self.keep_tmem and ctx.tmem_if_used is not None:
            ctx.stats.tmem = ctx.tmem_if_used.cells.copy()

    def ctas(self):
        g = self.grid
        return [(x, y, z) for z in range(g[2]) for y in range(g[1]) for x in range(g[0])]

    def alone(self) -> None:
        """Every CTA after another, one memory reused; each is a scheduler of its own (its
        forked thread sets take turns)."""
        mem = self.memory()
        for cta in self.ctas():
            mem.reset()
            self.races.begin_cta(cta)
            ctx = self.ctx(cta, mem)
            Scheduler().run([(ctx, self.execute)])
            self.report.ctas.append(ctx.stats)

    def clustered(self) -> None:
        """Cluster after cluster; the CTAs of one run together, as the root tasks of one
        scheduler (:mod:`.cluster`, :mod:`.scheduler`)."""
        size = self.cluster[0] * self.cluster[1] * self.cluster[2]
        groups: dict = {}
        for cta in self.ctas():
            key = tuple(c // n for c, n in zip(cta, self.cluster))
            groups.setdefault(key, []).append(cta)
        for members in groups.values():
            cl = Cluster(size, self.block)
            self.races.begin_cta(members[0])
            for cta in members:
                rank = cluster_rank(cta, self.cluster)
                ctx = self.ctx(cta, self.memory(rank))
                ctx.cluster, ctx.rank = cl, rank
                cl.ctxs[ctx.rank] = ctx
            Scheduler().run([(ctx, lambda c, cl=cl: self._cluster_cta(cl, c))
                             for ctx in cl.ctxs])
            self.report.ctas.extend(c.stats for c in cl.ctxs)

    def _cluster_cta(self, cl: Cluster, ctx) -> None:
        try:
            self.execute(ctx)
        finally:  # an exited CTA counts as arrived at the cluster barrier
            cl.exited(ctx.rank)


def run_program(prog: Program, globals_, grid, opts: SimOptions,
                values: dict | None = None) -> SimReport:
    """Execute every CTA of ``grid``: one after another, or cluster by cluster when the
    kernel declares clusters (``T.cta_id_in_cluster``)."""
    run = _Run(prog, globals_, grid, opts, values)
    if any(g % c for g, c in zip(grid, run.cluster)):
        raise LaunchError(f"the grid {grid} is not a whole number of clusters {run.cluster}",
                          prog.func.span, "make every grid dimension a multiple of the "
                          "cluster's")
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        if run.cluster == (1, 1, 1):
            run.alone()
        else:
            run.clustered()
    run.report.seconds = time.perf_counter() - t0
    return run.report


@api_boundary
def simulate(func, *args, target=None, grid=None, strict: bool | None = None,
             keep_tmem: bool = False, outputs=(), checks: str | None = None,
             strict_races: bool | None = None, perf: bool = False) -> SimReport:
    """Run a kernel on the CPU, writing results into the argument arrays in place.

    ``func``: a ``@T.prim_func`` (lowered here for ``target``, default sm_90a) or a
    ``Lowered`` program (which runs for the target it was lowered for); ``args``: in
    parameter order, as at launch: a numpy array per global buffer (dtype and shape checked;
    symbolic sizes bound from them) and a number per scalar parameter (range-checked against
    its dtype); ``grid``: override the CTA grid; ``strict``: raise the first
    :class:`HazardError` (default, or ``knobs.sim_strict`` from TILEWISE_SIM_STRICT) or
    record every hazard in the report and carry on; ``keep_tmem``: keep each CTA's tensor
    memory at exit in ``report.ctas[i].tmem`` (to check which cells a tcgen05 program
    wrote); ``outputs``: names of global buffers the kernel should write before it reads
    them — their arrays are filled with 0xFF bytes (NaN for floats) and a read of a byte
    the launch has not written is a hazard, as on a fresh ``cudaMalloc``; ``checks``:
    ``"full"`` (default, or ``knobs.sim_checks``), ``"races"`` (data races and memory
    ordering only) or ``"none"`` (results only: bounds and deadlocks are still reported);
    ``strict_races``: two CTAs writing identical bytes to one place is a hazard rather than
    a warning in ``report.warnings`` (default ``knobs.sim_strict_races``); ``perf``: count
    shared-memory bank conflicts and global sectors per access site, and collect the
    dispatch's warnings, in ``report.perf`` (:mod:`tilewise.sim.perf`). Returns a
    :class:`SimReport`.
    An object standing for a kernel whose calls first rewrite their arguments (a GEMM that
    pads sizes TMA cannot describe) defines ``__tilewise_simulate__(self, simulate, *args,
    **options)`` and is simulated by it: it calls ``simulate`` on the kernel and the
    arguments it really launches, then does on the CPU what its call does after the launch.
    """
    from ..knobs import knobs

    hook = getattr(type(func), "__tilewise_simulate__", None)
    if hook is not None:
        return hook(func, simulate, *args, target=target, grid=grid, strict=strict,
                    keep_tmem=keep_tmem, outputs=outputs, checks=checks,
                    strict_races=strict_races, perf=perf)
    lowered = lower_for_sim(func, target)
    kernel, flat = lowered.kernel or lowered.func, lowered.func
    opts = SimOptions(knobs.sim_strict if strict is None else bool(strict),
                      knobs.sim_strict_races if strict_races is None else bool(strict_races),
                      _checks(knobs.sim_checks if checks is None else checks, flat),
                      keep_tmem, _outputs(outputs, flat))
    globals_, values, binding = bind_arguments(kernel, args)
    values.update(_at(flat, bind_tensor_maps, flat, binding))
    for k in opts.outputs:
        globals_[k].fill(0xFF)
    observer = PerfObserver() if perf else None
    prog = (Program(flat, lowered.shared, observer, opts.checks) if observer is not None
            else program_for(flat, lowered.shared, opts.checks))
    report = run_program(prog, globals_, _grid(flat, grid, binding), opts, values)
    if observer is not None:
        report.perf_report = observer.report(lowered.dispatch_log)
    if report.warnings:
        first = report.warnings[0]
        warnings.warn(f"{flat.name}: {len(report.warnings)} benign race(s) (report.warnings), "
                      f"the first at {first.span}: {first.message}", SimulationWarning,
                      stacklevel=2)
    return report


_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def program_for(flat, shared, checks: str) -> Program:
    """The closure tree of a flat kernel for a check level, compiled once per kernel, shared
    layout and level (a Program keeps no launch state: every launch gets fresh memories;
    one with a perf observer is never kept)."""
    per = _PROGRAMS.setdefault(flat, {})
    key = (id(shared), checks)
    hit = per.get(key)
    if hit is None or hit[0] is not shared:
        hit = per[key] = (shared, Program(flat, shared, None, checks))
    return hit[1]


def _checks(checks, func) -> str:
    from ..knobs import SIM_CHECKS

    if checks not in SIM_CHECKS:
        raise LaunchError(f"checks={checks!r} is not a check level", func.span,
                          "pass checks='full' (every check), 'races' (data races and memory "
                          "ordering) or 'none' (results only)")
    return checks


def _outputs(names, func) -> tuple:
    """The indices of the global parameters ``names`` (buffer or parameter names) name."""
    if isinstance(names, str):
        names = (names,)
    by_param = {id(v): b for v, b in func.buffer_map}
    params = [p for p in func.params if id(p) in by_param]
    out = []
    for n in names:
        k = next((i for i, p in enumerate(params)
                  if n in (p.name, by_param[id(p)].name)), None)
        if k is None:
            raise LaunchError(f"outputs= names {n!r}, which is not a global buffer of "
                              f"{func.name}", func.span, "name buffers among: "
                              + ", ".join(by_param[id(p)].name for p in params))
        out.append(k)
    return tuple(sorted(set(out)))
