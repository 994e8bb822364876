"""Compiling many configurations of a kernel factory at once, in worker processes
(``tilewise.autotune``'s candidates): compilation is CPU-bound (the Python passes, LLVM,
nvJitLink) and holds the GIL for much of it, so threads would not help.

A worker needs the factory: a module-level function, or a ``functools.partial`` of one
with picklable arguments, is described by a :class:`Recipe` (module name, source file,
qualified name, bound arguments) and rebuilt in the worker (imported by name when the
worker can, else loaded from the file under a private module name). Each worker lowers,
generates and links the cubin (which also fills the on-disk compile cache) and returns the
pickled :class:`~tilewise.compiler.Kernel` with its cubin, or the reason it failed. A
factory without a recipe (a lambda, a closure) is compiled here, one config after another.

The workers are ``python -m tilewise.compile_worker`` processes (one per CPU core, started
on first use and kept for the process), fed pickled jobs on a pipe: unlike
``multiprocessing``'s spawn and forkserver they never re-run the user's main script, and
unlike fork they do not inherit a CUDA context or the parent's threads. A job carries the
parent's ``sys.path``; a worker that dies (a crash in LLVM) fails its candidate with the
reason and is replaced.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

_POOL = None  # the _Pool of this process


@dataclass(frozen=True)
class Recipe:
    """How to rebuild a factory in another process."""

    module: str
    file: str | None
    qualname: str
    args: tuple
    kwargs: tuple

    @classmethod
    def of(cls, factory) -> Recipe | None:
        f, args, kw = factory, (), {}
        if isinstance(factory, functools.partial):
            f, args, kw = factory.func, factory.args, factory.keywords
        qual = getattr(f, "__qualname__", "")
        if not callable(f) or "<locals>" in qual or "<lambda>" in qual or not qual:
            return None
        code = getattr(f, "__code__", None)
        file = getattr(sys.modules.get(getattr(f, "__module__", "")), "__file__", None) or (
            code.co_filename if code is not None and os.path.exists(code.co_filename) else None)
        r = cls(f.__module__, os.path.abspath(file) if file else None, qual, tuple(args),
                tuple(sorted(kw.items())))
        try:
            pickle.dumps(r)
        except Exception:  # noqa: BLE001 - unpicklable bound arguments: compile here
            return None
        return r

    def build(self):
        mod = _module(self.module, self.file)
        obj = mod
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        return functools.partial(obj, *self.args, **dict(self.kwargs))


def _module(name: str, file: str | None):
    mod = sys.modules.get(name)
    if mod is not None and _same_file(mod, file):
        return mod
    if name != "__main__":
        try:
            mod = importlib.import_module(name)
            if _same_file(mod, file):
                return mod
        except ImportError:
            pass
    if file is None:
        raise ImportError(f"cannot find the module {name!r} of the kernel factory")
    private = "_tilewise_factory_" + hashlib.sha256(file.encode()).hexdigest()[:16]
    if private in sys.modules:
        return sys.modules[private]
    spec = importlib.util.spec_from_file_location(private, file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[private] = mod
    spec.loader.exec_module(mod)
    return mod


def _same_file(mod, file: str | None) -> bool:
    f = getattr(mod, "__file__", None)
    return file is None or (f is not None and os.path.abspath(f) == file)


@dataclass
class Built:
    """One candidate: the pickled compiled kernel, or why it failed; the performance
    warnings its compile raised as ``(message, file, line)``."""

    blob: bytes | None
    reason: str | None = None
    warnings: list = field(default_factory=list)


def compile_one(factory, config: dict, target) -> Built:
    """Lower, generate and link ``factory(**config)`` for ``target``."""
    from .compiler import compile as tw_compile
    from .errors import TilewisePerformanceWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", TilewisePerformanceWarning)
        try:
            k = tw_compile(factory(**config), target)
            k.cubin  # noqa: B018 - LLVM, PTX and nvJitLink now, in this process
            blob = pickle.dumps(k)
        except Exception as e:  # noqa: BLE001 - every failure is a dropped candidate
            return Built(None, _reason(e))
    return Built(blob, None, [(str(w.message), w.filename, w.lineno) for w in seen
                              if issubclass(w.category, TilewisePerformanceWarning)])


def _reason(e: Exception) -> str:
    text = getattr(e, "message", None) or str(e)
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def run_job(job: tuple) -> Built:
    """A worker's job: ``(sys.path, knobs, recipe, config, target)`` (the parent's path and
    settings: its cache folder, for one)."""
    from .knobs import knobs

    path, settings, recipe, config, target = job
    for k, v in settings.items():
        setattr(knobs, k, v)
    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    try:
        factory = recipe.build()
    except Exception as e:  # noqa: BLE001
        return Built(None, f"the factory could not be rebuilt in a worker: {_reason(e)}")
    return compile_one(factory, config, target)


def compile_all(factory, configs: list[dict], target) -> list[Built]:
    """Every config of ``factory`` compiled, in parallel when it has a :class:`Recipe`."""
    return compile_many([(factory, c) for c in configs], target)


def compile_many(jobs: list[tuple], target) -> list[Built]:
    """``[(factory, config), ...]`` compiled for ``target``, in order: those whose factory
    has a :class:`Recipe` in the workers (all at once), the others here."""
    from .knobs import knobs

    recipes = [Recipe.of(f) for f, _ in jobs]
    remote = [i for i, r in enumerate(recipes) if r is not None]
    out: list[Built | None] = [None] * len(jobs)
    if len(remote) > 1:
        settings, path = dataclasses.asdict(knobs), list(sys.path)
        done = _pool().map([(path, settings, recipes[i], jobs[i][1], str(target))
                            for i in remote])
        for i, b in zip(remote, done):
            out[i] = b
    for i, (f, c) in enumerate(jobs):
        if out[i] is None:
            out[i] = compile_one(f, c, target)
    return out


class _Worker:
    """One ``python -m tilewise.compile_worker`` process: pickled jobs in on its stdin,
    pickled results out on its stdout (the worker moves its own prints to stderr)."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "tilewise.compile_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, job) -> Built:
        try:
            _send(self.proc.stdin, job)
            return _receive(self.proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as e:
            self.close()
            return Built(None, f"the compile worker died ({type(e).__name__}: {e})")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _send(f, obj) -> None:
    data = pickle.dumps(obj)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _receive(f):
    head = f.read(8)
    if len(head) < 8:
        raise EOFError("no reply")
    (n,) = struct.unpack("<Q", head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError("a cut reply")
    return pickle.loads(data)


class _Pool:
    """Worker processes, one per CPU core, started on first use and kept."""

    def __init__(self, size: int):
        self.size, self.idle = size, queue.Queue()
        self.started = 0
        self.lock = threading.Lock()

    def _take(self) -> _Worker:
        with self.lock:
            if self.idle.empty() and self.started < self.size:
                self.started += 1
                return _Worker()
        return self.idle.get()

    def _give(self, w: _Worker) -> None:
        if w.alive:
            self.idle.put(w)
        else:
            with self.lock:
                self.started -= 1

    def run(self, job) -> Built:
        w = self._take()
        try:
            return w.run(job)
        finally:
            self._give(w)

    def map(self, jobs) -> list[Built]:
        with ThreadPoolExecutor(max_workers=min(self.size, len(jobs))) as ex:
            return list(ex.map(self.run, jobs))

    def close(self) -> None:
        while not self.idle.empty():
            self.idle.get().close()


def _pool() -> _Pool:
    global _POOL
    if _POOL is None:
        _POOL = _Pool(max(1, os.cpu_count() or 1))
        atexit.register(_shutdown)
    return _POOL


def _shutdown() -> None:
    global _POOL
    if _POOL is not None:
        _POOL.close()
        _POOL = None
