"""``tilewise.autotune``: pick the fastest configuration of a kernel factory on the GPU,
once per key, and remember it on disk.

    k = tilewise.autotune(functools.partial(make_kernel, rows, cols, "float16"),
                          configs=[{"threads": 256}, {"threads": 512}])
    k(X, Y)                      # the first launch for this key tunes; later ones launch

    @tilewise.autotune(configs=lambda rows, cols: [...], key=lambda X, Y: X.shape)
    def make_kernel(rows, cols, *, threads): ...     # make_kernel(4096, 3000) is tuned

``factory(**config)`` returns a ``@T.prim_func`` for each candidate ``config`` (a dict);
the first config is the *heuristic* one. On a launch ``k(*args)``:

1. The **key** is ``key(*args)`` (default: each array's shape and dtype, each scalar's
   value), with the device (name and compute capability), the target, and a hash of the
   factory (its module's source, its name and bound arguments, the configs, the tilewise
   version and sources). A key tuned before in this process launches its kernel at once.
2. The **disk cache** (``<TILEWISE_CACHE_DIR>/kernels/..``, kinds ``tune`` and ``tunek``)
   holds, per key, the winner and every candidate's time or failure, and the winner's
   compiled kernel; a second process loads both (no lowering, no LLVM: a few ms). Compiled
   candidates are kept too (kind ``tunec``, per factory, bound arguments and config), so a
   new key of a known factory only times them; :func:`precompile` compiles the candidates
   of many tuned kernels in one batch (a sweep over shapes).
3. Otherwise **tune**: every candidate is compiled to a cubin in parallel, in worker
   processes (compilation is CPU-bound LLVM and nvJitLink; a factory that is a module-level
   function or a ``functools.partial`` of one is rebuilt in the worker from its module's
   file; anything else compiles in this process, one after another). A candidate that fails
   to compile (too much shared memory, no variant for a tile call, ...) is dropped with its
   reason kept (:meth:`Autotuned.report`); if all fail, the error names each. The rest are
   timed on the GPU (:class:`tilewise.runtime.timer.CudaTimer`: warm-up, and 50 ms of
   back-to-back launches so the samples see the clock a kernel runs at sustained, then
   the median of repetitions, each after a 256 MB write that flushes L2; the candidates' repetitions
   interleaved, so that the GPU's clock drifting during tuning falls on all alike) on the
   call's own arrays (``restore=``: positions of arrays the kernel writes in place, saved
   before tuning and put back after every candidate). The fastest wins, except that the
   first (heuristic) config stays unless another is faster by more than
   :data:`KEEP_FIRST_WITHIN` (timings of one kernel differ by about that much from run to
   run: a near tie is noise, and the heuristic is the better bet). When tuning takes more
   than a second, a progress line goes to stderr.

``TILEWISE_AUTOTUNE=0`` (:mod:`tilewise.knobs`) skips tuning and uses the first config; so
does a machine without a GPU (unless a ``timer=`` is given), and ``tw.simulate`` /
``tw.compile`` always take the first config (the object stands for its heuristic kernel
there: ``k.heuristic()``). Performance warnings a candidate raises are raised again at
the user's line for the winner.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import statistics
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

from .errors import CompileError, TilewiseError

PROGRESS_AFTER = 1.0  # seconds of tuning before the progress line
KEEP_FIRST_WITHIN = 0.02  # the first config wins unless another beats it by more (relative)
#  (the H200 GEMM sweep, 2026-12-02: the tuner swapped the model's 128x256 for a 128x128
#  0.3 % faster in its timing that ran 2-6 % slower in the benchmark's)


def autotune(factory=None, *, configs, key=None, timer=None, target=None, device=None,
             restore=(), wrap=None):
    """Wrap ``factory`` (``factory(**config) -> PrimFunc``) in an :class:`Autotuned`
    kernel; without ``factory``, a decorator for ``f(*args, **config)``: ``f(*args)`` then
    returns the tuned kernel, ``configs`` may be a function of ``args``. See the module
    doc. ``timer(kernel, args) -> seconds`` replaces the GPU timer (tests), ``target`` the
    device's target, ``device`` the device name in the key. ``wrap(config, kernel)``, when
    given, returns what launches a compiled candidate as ``run(*args, stream=...)``: for a
    config whose kernel takes more than the user's arguments (a stream-K GEMM's
    workspace), the wrapper supplies them; it is timed, and returned by launches, in the
    kernel's place (``None`` from it: the kernel as it is)."""
    opts = dict(key=key, timer=timer, target=target, device=device, restore=restore,
                wrap=wrap)
    if factory is None:
        def decorate(f):
            @functools.wraps(f)
            def bound(*args, **kwargs):
                cs = configs(*args, **kwargs) if callable(configs) else configs
                return Autotuned(functools.partial(f, *args, **kwargs), cs, **opts)
            return bound
        return decorate
    return Autotuned(factory, configs() if callable(configs) else configs, **opts)


def default_key(*args) -> tuple:
    """Each array's shape and dtype, each scalar's type and value."""
    out = []
    for a in args:
        shape = getattr(a, "shape", None)
        if shape is not None:
            out.append((tuple(int(s) for s in shape), str(getattr(a, "dtype", ""))))
        else:
            out.append((type(a).__name__, a if isinstance(a, (int, float, bool, str)) else None))
    return tuple(out)


def _fast_key(*args) -> tuple:
    """:func:`default_key` without its conversions (torch.Size and torch.dtype are hashable
    as they are): what a launch computes to find its kernel."""
    return tuple((a.shape, a.dtype) if hasattr(a, "shape") else a for a in args)


@dataclass
class TuneResult:
    """One key's tuning: the winner's index, each candidate's seconds (None: failed) and
    failure reason, the wall time of the tuning, and whether it came from the disk."""

    key: str
    winner: int
    times: list
    reasons: list
    seconds: float = 0.0
    cached: bool = False
    kernel_bytes: bytes | None = field(default=None, repr=False)
    warnings: list = field(default_factory=list, repr=False)

    def to_json(self) -> bytes:
        return json.dumps({"winner": self.winner, "times": self.times,
                           "reasons": self.reasons, "seconds": self.seconds,
                           "warnings": self.warnings}).encode()


class Autotuned:
    """A kernel tuned per key over ``configs`` (see the module doc). ``k(*args)`` launches;
    ``k.heuristic()`` is the first config's ``PrimFunc`` (what ``tw.simulate`` and
    ``tw.compile`` take); ``k.select(*args)`` the config that would run;
    ``k.report()`` lists the candidates of the tunings so far."""

    def __init__(self, factory, configs, key=None, timer=None, target=None, device=None,
                 restore=(), wrap=None):
        configs = list(configs) if configs is not None else []
        if not configs or not all(isinstance(c, dict) for c in configs):
            raise TilewiseError("tilewise.autotune needs a non-empty list of configs, each a "
                                f"dict of the factory's keyword arguments; got {configs!r}",
                                hint="e.g. configs=[{'threads': 256}, {'threads': 512}]")
        self.factory, self.configs = factory, [dict(c) for c in configs]
        self._key_fn, self._timer, self._target = key or default_key, timer, target
        self._fast_key = key or _fast_key  # the in-process lookup: no conversions
        self._device, self.restore = device, tuple(restore)
        self._wrap = wrap
        self._funcs: dict[int, object] = {}
        self._kernels: dict = {}  # key(*args) -> compiled kernel
        self._fhash: str | None = None
        self.results: dict[str, TuneResult] = {}

    # ---- the heuristic kernel: what simulate / compile take ---------------------------
    def kernel(self, config: dict | int = 0):
        """The ``PrimFunc`` of ``config`` (a dict, or an index into ``configs``)."""
        i = config if isinstance(config, int) else self.configs.index(config)
        if i not in self._funcs:
            self._funcs[i] = self.factory(**self.configs[i])
        return self._funcs[i]

    def heuristic(self):
        return self.kernel(0)

    __tilewise_prim_func__ = heuristic

    def __getattr__(self, name):
        if name.startswith("_") or name in ("factory", "configs", "results", "restore"):
            raise AttributeError(name)
        return getattr(self.heuristic(), name)  # script(), name, params, ... of a PrimFunc

    def __repr__(self) -> str:
        return f"<tilewise.autotune {_name(self.factory)} over {len(self.configs)} configs>"

    # ---- launching ------------------------------------------------------------------
    def __call__(self, *args, stream=None):
        return self.compiled(*args)(*args, stream=stream)

    def compiled(self, *args):
        """The compiled kernel for ``args``' key (tuned, loaded or compiled as needed). A key
        seen before costs one dict lookup: ``k(*args)`` in a loop stays cheap."""
        raw = self._fast_key(*args)
        k = self._kernels.get(raw)
        if k is None:
            k = self._kernels[raw] = self._kernel_for(args, self._full_key(args))
        return k

    def select(self, *args) -> dict:
        """The config that runs for ``args``."""
        return self.configs[self._result(args, self._full_key(args)).winner]

    def _kernel_for(self, args, full: str):
        from .compiler import compile as tw_compile

        r = self._result(args, full)
        blob = r.kernel_bytes or (_cache_load(full, "tunek") if r.cached else None)
        if blob is not None:
            try:
                k = pickle.loads(blob)
                _rewarn(r.warnings)
                return self._wrapped(r.winner, k)
            except Exception:  # noqa: BLE001 - a stale or damaged entry: compile it again
                pass
        return self._wrapped(r.winner, tw_compile(self.kernel(r.winner), self._target_obj()))

    def _wrapped(self, i: int, kernel):
        """What launches config ``i``'s compiled kernel (``wrap``'s, when it has one)."""
        if self._wrap is None:
            return kernel
        run = self._wrap(self.configs[i], kernel)
        return kernel if run is None else run

    def _result(self, args, full: str) -> TuneResult:
        r = self.results.get(full)
        if r is not None:
            return r
        from .knobs import knobs

        if len(self.configs) == 1 or not knobs.autotune or not self._can_time():
            r = TuneResult(full, 0, [None] * len(self.configs), [None] * len(self.configs))
        else:
            r = _cached_result(full, len(self.configs)) or self._tune(args, full)
        self.results[full] = r
        return r

    def _can_time(self) -> bool:
        if self._timer is not None and not getattr(self._timer, "needs_gpu", False):
            return True  # a user's timer (a test's) times anywhere; a CudaTimer needs a GPU
        from .runtime import gpu_available

        return gpu_available()

    def _target_obj(self):
        from .target import Target

        if self._target is not None:
            return Target(self._target)
        from .runtime import device_target, gpu_available

        return device_target() if gpu_available() else Target("sm_90a")

    def _full_key(self, args) -> str:
        parts = [self._device_name(), str(self._target_obj()), self._factory_hash(),
                 repr(self.configs), repr(self._key_fn(*args))]
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()

    def _factory_hash(self) -> str:
        if self._fhash is None:
            self._fhash = _factory_hash(self.factory)
        return self._fhash

    def _device_name(self) -> str:
        if self._device is not None:
            return self._device
        from .runtime import gpu_available

        if not gpu_available():
            return "no-gpu"
        from .runtime.timer import device_name

        return device_name()

    # ---- tuning ---------------------------------------------------------------------
    def _tune(self, args, full: str) -> TuneResult:
        start = time.perf_counter()
        progress = _Progress(self, args)
        try:
            built = self.candidates()
            times, reasons = self._time_all(built, args)
        finally:
            progress.stop()
        ok = [i for i, t in enumerate(times) if t is not None]
        if not ok:
            lines = "\n".join(f"  {_cfg(c)}: {r}" for c, r in zip(self.configs, reasons))
            raise CompileError(f"tilewise.autotune: every config of {_name(self.factory)} "
                               f"failed:\n{lines}", hint="fix the factory or the configs")
        win = min(ok, key=lambda i: times[i])
        if 0 in ok and times[0] <= times[win] * (1 + KEEP_FIRST_WITHIN):
            win = 0  # a near tie: keep the heuristic
        r = TuneResult(full, win, times, reasons, time.perf_counter() - start,
                       kernel_bytes=built[win].blob, warnings=built[win].warnings)
        _cache_store(full, "tune", r.to_json())
        _cache_store(full, "tunek", r.kernel_bytes)
        _rewarn(r.warnings)
        progress.done(r)
        return r

    def candidates(self) -> list:
        """Every config compiled (:class:`tilewise.compile_pool.Built`): from this process's
        memo or the disk cache (kind ``tunec``), else all missing ones at once in the compile
        workers."""
        precompile(self)
        return [_BUILT[k] for k in self._candidate_keys()]

    def _candidate_keys(self) -> list[str]:
        base = "\x00".join([self._factory_hash(), str(self._target_obj())])
        return [hashlib.sha256(f"{base}\x00{sorted(c.items())!r}".encode()).hexdigest()
                for c in self.configs]

    def _time_all(self, built, args):
        """Every candidate warmed up (``timer.prepare``), then sample r of each before
        sample r + 1 of any (``timer.sample``, ``timer.reps`` rounds), so that a drift of
        the GPU's clock or temperature during tuning falls on all candidates alike (timed
        one after another, the first in line, the heuristic, would take all its samples
        while the clock is still rising). The median of each; the arrays of ``restore``
        put back after every launch. A plain ``timer(kernel, args) -> seconds`` gives one
        sample a candidate (:class:`_WholeTimer`)."""
        timer = self._timer
        if timer is None:
            from .runtime.timer import CudaTimer

            timer = CudaTimer()
        if not hasattr(timer, "sample"):
            timer = _WholeTimer(timer)
        saved = [(i, _snapshot(args[i])) for i in self.restore]
        reasons = [b.reason for b in built]
        kernels = {}
        for n, b in enumerate(built):
            if b.blob is None:
                continue
            try:
                kernels[n] = self._wrapped(n, pickle.loads(b.blob))
                timer.prepare(kernels[n], args)
            except TilewiseError as e:
                kernels.pop(n, None)
                reasons[n] = f"{type(e).__name__}: {e.message}"
            for i, s in saved:
                _put_back(args[i], s)
        samples = {n: [] for n in kernels}
        for _ in range(timer.reps):
            for n in list(kernels):
                try:
                    samples[n].append(timer.sample(kernels[n], args))
                except TilewiseError as e:
                    del kernels[n]
                    reasons[n] = f"{type(e).__name__}: {e.message}"
                for i, s in saved:
                    _put_back(args[i], s)
        times = [float(statistics.median(samples[n])) if n in kernels else None
                 for n in range(len(built))]
        return times, reasons

    def report(self) -> str:
        """Every tuning so far: each candidate's time or why it failed, the winner."""
        lines = []
        for r in self.results.values():
            how = "from the disk cache" if r.cached else f"tuned in {r.seconds:.2f} s"
            lines.append(f"{_name(self.factory)} key {r.key[:12]} ({how}):")
            for i, c in enumerate(self.configs):
                t = r.times[i]
                what = (f"{t * 1e6:9.2f} us" if t is not None else
                        f"failed: {r.reasons[i]}" if r.reasons[i] else "not timed")
                lines.append(f"  {'*' if i == r.winner else ' '} {_cfg(c)}: {what}")
        return "\n".join(lines) or f"{_name(self.factory)}: not tuned yet"


class _WholeTimer:
    """A plain ``timer(kernel, args) -> seconds`` (a user's ``timer=``, a test's) in the
    prepare / sample form :meth:`Autotuned._time_all` takes: one sample, the timer's
    whole answer."""

    reps = 1

    def __init__(self, timer):
        self.timer = timer

    def prepare(self, kernel, args) -> None:
        pass

    def sample(self, kernel, args) -> float:
        return self.timer(kernel, args)


_BUILT: dict = {}  # candidate key -> Built, this process's memo of compiled candidates


def precompile(*tuned: Autotuned) -> None:
    """Compile every candidate of the given tuned kernels that is neither in this process's
    memo nor in the disk cache, all in one batch of the compile workers (a sweep over many
    shapes calls this once, instead of compiling a handful per shape)."""
    from .compile_pool import Built, compile_many

    todo, jobs = [], []
    for t in tuned:
        for i, key in enumerate(t._candidate_keys()):
            if key in _BUILT or key in todo:
                continue
            blob = _cache_load(key, "tunec")
            if blob is not None:
                _BUILT[key] = Built(blob)
                continue
            todo.append(key)
            jobs.append((t.factory, t.configs[i], t._target_obj()))
    by_target: dict = {}
    for key, (f, c, target) in zip(todo, jobs):
        by_target.setdefault(str(target), []).append((key, f, c))
    for target, items in by_target.items():
        for (key, _, _), b in zip(items, compile_many([(f, c) for _, f, c in items], target)):
            _BUILT[key] = b
            if b.blob is not None and not b.warnings:
                _cache_store(key, "tunec", b.blob)


autotune.precompile = precompile


# ---- helpers ------------------------------------------------------------------------
def _name(factory) -> str:
    f = factory.func if isinstance(factory, functools.partial) else factory
    return getattr(f, "__qualname__", repr(f))


def _cfg(c: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in c.items()) or "{}"


@functools.lru_cache(maxsize=256)
def _file_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _factory_hash(factory) -> str:
    """What a compiled candidate depends on besides its config: the factory's module
    source, its name and bound arguments, the tilewise version and sources."""
    from ._version import __version__
    from .compiler import _source_fingerprint

    f, args, kw = factory, (), {}
    if isinstance(factory, functools.partial):
        f, args, kw = factory.func, factory.args, factory.keywords
    parts = [getattr(f, "__module__", ""), getattr(f, "__qualname__", repr(f)), repr(args),
             repr(sorted(kw.items())), __version__, _source_fingerprint()]
    code = getattr(f, "__code__", None)
    try:
        parts.append(_file_text(code.co_filename))
    except (AttributeError, OSError):
        parts.append(repr(getattr(getattr(f, "__code__", None), "co_code", None)))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _cache_load(key: str, kind: str) -> bytes | None:
    from .codegen import cache

    return cache.load(key, kind)


def _cache_store(key: str, kind: str, payload: bytes | None) -> None:
    from .codegen import cache

    if payload is not None:
        cache.store(key, kind, payload)


def _cached_result(full: str, n: int) -> TuneResult | None:
    blob = _cache_load(full, "tune")
    if blob is None:
        return None
    try:
        d = json.loads(blob)
        if len(d["times"]) != n or not 0 <= int(d["winner"]) < n:
            return None
        return TuneResult(full, int(d["winner"]), d["times"], d["reasons"], d["seconds"],
                          cached=True, warnings=[tuple(w) for w in d.get("warnings", [])])
    except (ValueError, KeyError, TypeError):
        return None


def _rewarn(ws) -> None:
    from .errors import TilewisePerformanceWarning

    for message, filename, lineno in ws or ():
        warnings.warn_explicit(message, TilewisePerformanceWarning, filename, lineno)


def _snapshot(a):
    return a.clone() if hasattr(a, "clone") else a.copy()


def _put_back(a, saved) -> None:
    if hasattr(a, "copy_"):
        a.copy_(saved)
    else:
        a[...] = saved


class _Progress:
    """A line on stderr when tuning has taken more than :data:`PROGRESS_AFTER` seconds."""

    def __init__(self, tuned: Autotuned, args):
        self.tuned, self.shown = tuned, False
        self.what = (f"tilewise.autotune: tuning {_name(tuned.factory)} "
                     f"({len(tuned.configs)} configs) for {tuned._key_fn(*args)}")
        self.t = threading.Timer(PROGRESS_AFTER, self._show)
        self.t.daemon = True
        self.t.start()

    def _show(self):
        self.shown = True
        print(self.what + " ...", file=sys.stderr, flush=True)

    def stop(self):
        self.t.cancel()

    def done(self, r: TuneResult):
        if self.shown:
            failed = sum(t is None for t in r.times)
            print(f"{self.what}: {_cfg(self.tuned.configs[r.winner])} in "
                  f"{r.times[r.winner] * 1e6:.1f} us, tuned in {r.seconds:.1f} s"
                  + (f" ({failed} failed: k.report())" if failed else ""),
                  file=sys.stderr, flush=True)
