"""``tw.compile``: the pipeline driver.

``compile(func, target, **options)`` lowers the kernel at once (dispatch and target errors
surface here, at the user's line) and returns a :class:`Kernel` whose later stages are
lazy: LLVM IR, PTX and the cubin are built when first asked for (``k.source("ptx")``,
``k.cubin``, or the first launch) and kept in the on-disk cache
(:mod:`tilewise.codegen.cache`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os

from .errors import CompileError, TargetError, api_boundary

STAGES = ("ir", "lowered", "llvm", "ptx")


def _lower(func, target):
    """The pipeline's result for ``target``; its target errors are compile errors."""
    from .pipeline import lower

    try:
        return lower(func, target)
    except TargetError as e:
        raise CompileError(e.message, e.span, e.hint) from e


@functools.lru_cache(maxsize=1)
def _source_fingerprint() -> str:
    """Changes whenever a tilewise source file changes (sizes and mtimes)."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def toolchain_fingerprint() -> str:
    """Changes whenever the installed LLVM (llvmlite) or nvJitLink changes: the sizes and
    mtimes of llvmlite's version file and shared library and of the nvJitLink library,
    found without importing either (so that a kernel whose PTX and cubin are cached
    reaches its launch without loading LLVM or nvJitLink)."""
    import importlib.util

    files = []
    spec = importlib.util.find_spec("llvmlite")
    if spec is not None and spec.origin:
        root = os.path.dirname(spec.origin)
        files.append(os.path.join(root, "_version.py"))
        files += _libraries(os.path.join(root, "binding"), "llvmlite")
    nvidia = importlib.util.find_spec("nvidia")
    for base in (nvidia.submodule_search_locations if nvidia else ()) or ():
        for sub in sorted(os.listdir(base)):
            files += _libraries(os.path.join(base, sub, "lib"), "nvJitLink")
    h = hashlib.sha256()
    for path in files:
        try:
            st = os.stat(path)
            h.update(f"{path}:{st.st_size}:{st.st_mtime_ns};".encode())
        except OSError:
            h.update(f"{path}:missing;".encode())
    return h.hexdigest()


def _libraries(folder: str, stem: str) -> list[str]:
    try:
        return [os.path.join(folder, n) for n in sorted(os.listdir(folder))
                if stem in n and (".so" in n or n.endswith((".dll", ".dylib")))]
    except OSError:
        return []


def cache_key(kernel_ir: str, target, options: dict) -> str:
    """The PTX cache key: printed kernel IR, target, options, tilewise version and sources,
    the installed LLVM and nvJitLink (:func:`toolchain_fingerprint`). The cubin key is this
    key's digest with ``cubin`` and the assembler (``codegen/cubin.assembler``: nvJitLink, or
    the ptxas that assembles a kernel using setmaxnreg, by its path, size and mtime); the
    launch cache's adds the ptxas that would be used (:func:`_launch_cache`)."""
    from ._version import __version__

    parts = [kernel_ir, str(target), repr(sorted(options.items())), __version__,
             _source_fingerprint(), toolchain_fingerprint()]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


class Kernel:
    """A compiled kernel: ``k.source(stage)``, ``k.cubin``, ``k.dispatch_log``, ``k.target``,
    ``k.launch_config``; ``k(*arrays, stream=None)`` launches it on the GPU. ``k.lowered`` is
    the pipeline's :class:`~tilewise.pipeline.Lowered` (flat IR, target, features).

    A kernel found in the *launch cache* (its cubin and launch signature, stored the first
    time it was built; see :func:`compile`) is lowered only when something asks for its
    lowered program (``k.lowered``, ``k.source(...)``, ``k.dispatch_log``): launching it
    needs neither the pipeline nor LLVM."""

    def __init__(self, func, options: dict, lowered, target=None, launch_key=None,
                 saved=None, given=None):
        self.func, self.options, self._lowered = func, options, lowered
        self._given = options if given is None else given  # as passed to compile()
        self._target = lowered.target if lowered is not None else target
        self._launch_key, self._saved = launch_key, saved  # saved: (header, cubin) of a hit
        self._llvm = self._ptx = self._cubin = self._meta = self._key = None
        self._signature = None
        self._launcher = None

    @property
    def lowered(self):
        """The pipeline's result (lowered now for a kernel that came from the launch
        cache; its options are then checked as :func:`compile` checks them)."""
        if self._lowered is None:
            from .codegen import check_options
            from .codegen.check import check_launch, declared_cluster

            lowered = _lower(self.func, self._target)
            options = declared_cluster(check_options(self._given, lowered.target),
                                       lowered.func)
            check_launch(options, lowered.func)
            self._lowered, self.options = lowered, options
        return self._lowered

    @property
    def launch_signature(self):
        """What the launcher reads of the lowered program (``.func``: the parameters,
        sizes, grid and tensor maps; ``.target``): the lowered program itself, or the
        saved signature of a launch-cache hit (:mod:`tilewise.runtime.saved`)."""
        if self._lowered is not None or self._saved is None:
            return self.lowered
        if self._signature is None:
            from .runtime.saved import Signature

            self._signature = Signature.of(self._saved[0], self._target)
        return self._signature

    @property
    def launch_params(self):
        """The PrimFunc whose parameters and buffers a launch checks the arguments against:
        the kernel's own, or the saved signature's for a launch-cache hit (whose sizes,
        grid and tensor maps are expressions of the signature's own size variables)."""
        if self._lowered is not None or self._saved is None:
            return self.func
        return self.launch_signature.func

    @property
    def ptx_version(self) -> tuple[int, int]:
        return self.target.ptx_version_for(sorted(self.lowered.features))

    @property
    def key(self) -> str:
        """The PTX cache key (:func:`cache_key`), made when PTX is first asked for."""
        if self._key is None:
            self.lowered  # noqa: B018 - the key names the checked options
            self._key = cache_key(self.func.script(), self.target, self.options)
        return self._key

    @property
    def target(self):
        """The :class:`~tilewise.target.Target` the kernel was lowered for."""
        return self._target

    @property
    def dispatch_log(self) -> list:
        return self.lowered.dispatch_log

    @property
    def launch_config(self):
        """Grid (CTAs in x, y, z) and threads per CTA."""
        return self.launch_signature.func.launch_config

    @property
    def params(self):
        """The kernel's global buffers in parameter order."""
        by_param = {id(p): b for p, b in self.func.buffer_map}
        return [by_param.get(id(p)) for p in self.func.params]

    @property
    def asserts(self) -> list[tuple[str, str]]:
        """``("file:line", message)`` of each T.device_assert in the kernel."""
        if self._lowered is None and self._saved is not None:
            return [tuple(a) for a in self._saved[0].get("asserts", ())]
        from .ir.visitor import Visitor

        found = []

        class _Asserts(Visitor):
            def visit_Call(self, node):
                if node.op == "device_assert":
                    where = f"{node.span.file}:{node.span.line}" if node.span else "?"
                    found.append((where, node.args[1].value if node.args[1] is not None else ""))
                self.generic_visit(node)

        _Asserts().visit(self.lowered.func.body)
        return found

    @property
    def name(self) -> str:
        """The kernel's PTX entry name (sanitised)."""
        return self._metadata()["name"]

    @property
    def dynamic_smem(self) -> int:
        """Bytes of dynamic shared memory the launch must provide."""
        return self._metadata()["dynamic_smem"]

    @api_boundary
    def source(self, stage: str = "ptx") -> str:
        """The kernel at ``stage``: ``"ir"`` (as written), ``"lowered"`` (flat IR after
        dispatch), ``"llvm"`` (LLVM IR before optimisation) or ``"ptx"``."""
        if stage == "ir":
            return self.func.script()
        if stage == "lowered":
            return self.lowered.func.script()
        if stage == "llvm":
            return self._llvm_ir()
        if stage == "ptx":
            return self.ptx
        raise CompileError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)} (and the "
                           f"bytes in k.cubin)")

    def _llvm_ir(self) -> str:
        if self._llvm is None:
            from .codegen import generate

            em = generate(self.lowered.func, self.options, self.lowered.shared)
            self._llvm = str(em.module)
            self._meta = {"name": em.name, "dynamic_smem": em.dynamic_smem,
                          "static_smem": em.static_smem, "libdevice": sorted(em.libdevice)}
        return self._llvm

    def _metadata(self) -> dict:
        if self._meta is None and self._saved is not None:
            header = self._saved[0]
            return {"name": header["entry"], "dynamic_smem": header["dynamic_smem"]}
        if self._meta is None:
            self.ptx  # noqa: B018 - fills _meta from the cache or the build
        return self._meta

    @property
    @api_boundary
    def ptx(self) -> str:
        """The PTX text (built on first use, then cached in memory and on disk)."""
        if self._ptx is None:
            from .codegen import cache

            hit = cache.load(self.key, "ptx")
            entry = _decode(hit) if hit is not None else None
            if entry is None:
                entry = self._build_ptx()
                cache.store(self.key, "ptx", json.dumps(entry).encode())
            self._ptx, self._meta = entry["ptx"], entry["meta"]
        return self._ptx

    def _build_ptx(self) -> dict:
        from .codegen.backend import emit_ptx
        from .target import ptx_feature

        text = self._llvm_ir()
        ptx = emit_ptx(text, self._meta["name"], self.target.llvm_cpu,
                       ptx_feature(self.ptx_version), set(self._meta["libdevice"]))
        _dump(self, "ptx", ptx)
        return {"ptx": ptx, "meta": self._meta}

    @property
    @api_boundary
    def cubin(self) -> bytes:
        """The cubin for the kernel's target, assembled by nvJitLink (by ptxas when it uses
        setmaxnreg and one is found: codegen/cubin.py), cached."""
        if self._cubin is None and self._saved is not None:
            self._cubin = self._saved[1]
        if self._cubin is None:
            from .codegen import cache
            from .codegen.cubin import assembler

            name = self.key + "cubin " + assembler(self.ptx)
            key = hashlib.sha256(name.encode()).hexdigest()
            data = cache.load(key, "cubin")
            if data is None:
                from .codegen.cubin import link_cubin

                data = link_cubin(self.ptx, self.target.llvm_cpu, self.name)
                cache.store(key, "cubin", data)
            self._cubin = data
            if self._launch_key is not None:  # the launch cache (see compile)
                from .runtime import saved

                cache.store(self._launch_key, "launch", saved.to_bytes(self))
        return self._cubin

    @api_boundary
    def save(self, path) -> None:
        """Write the cubin and the launch signature to ``path``: ``tw.load(path)`` gives a
        launchable kernel without LLVM (:mod:`tilewise.runtime.saved`)."""
        from .runtime.saved import save

        save(self, path)

    @api_boundary
    def __call__(self, *arrays, stream=None):
        """Launch on the GPU with torch / CuPy / ``__cuda_array_interface__`` / DLPack arrays,
        checked against the kernel's buffers first (:class:`LaunchError`)."""
        if self._launcher is None:
            from .runtime.launch import Launcher

            self._launcher = Launcher(self)
        return self._launcher(arrays, stream)

    def __repr__(self) -> str:
        return f"<tilewise.Kernel {self.func.name} for {self.target}>"


def _decode(blob: bytes) -> dict | None:
    try:
        entry = json.loads(blob)
        if isinstance(entry.get("ptx"), str) and {"name", "dynamic_smem"} <= set(entry["meta"]):
            return entry
    except (ValueError, TypeError, AttributeError, KeyError):
        pass
    return None


def _dump(kernel: Kernel, stage: str, text: str) -> None:
    from .knobs import knobs

    if knobs.dump_dir:
        try:
            os.makedirs(knobs.dump_dir, exist_ok=True)
            with open(os.path.join(knobs.dump_dir, f"{kernel.func.name}.{stage}"), "w") as f:
                f.write(text)
        except OSError as e:
            raise CompileError(f"cannot write the {stage} dump to TILEWISE_DUMP_DIR="
                               f"{knobs.dump_dir}: {e.strerror or e}",
                               hint="point TILEWISE_DUMP_DIR at a writable folder, or unset "
                               "it") from None


@api_boundary
def compile(func, target="sm_90a", **options) -> Kernel:  # noqa: A001 - the public name
    """Compile ``func`` (a ``@T.prim_func``) for ``target`` (``"sm_90a"`` or a Target; None
    means the default, sm_90a, as in :func:`tilewise.simulate`).

    Options: ``maxntid``, ``minctasm``, ``maxnreg``, ``cluster_dim`` (the ``nvvm.*`` kernel
    attributes), ``nonportable_cluster`` (clusters of up to 16 CTAs), ``ftz`` (flush
    denormals in libdevice math) and ``programmatic`` (launched with programmatic dependent
    launch: it may start before the kernel ahead of it on its stream completes, and must
    call ``T.ptx.griddepcontrol.wait()`` before reading that kernel's results). Raises
    ScriptError, DispatchError or CompileError at the user's line.

    A kernel built before (the same IR, target, options, tilewise sources and toolchain)
    comes from the *launch cache*: its cubin and launch signature, written with its first
    cubin, so that a later process reaches its launch without lowering it again (the
    compile errors above were already absent then)."""
    from .ir.stmt import PrimFunc

    from .ir.stmt import as_prim_func

    func = as_prim_func(func)
    if not isinstance(func, PrimFunc):
        raise CompileError(f"tw.compile needs a @T.prim_func kernel, got {type(func).__name__}",
                           hint="decorate the kernel function with @T.prim_func")
    target = "sm_90a" if target is None else target
    launch_key, hit = _launch_cache(func, target, options)
    if hit is not None:
        from .runtime.saved import options_of

        return Kernel(func, options_of(hit[0]), None, _target_of(target), saved=hit,
                      given=options)
    from .codegen import check_options
    from .codegen.check import check_launch, check_programmatic, declared_cluster

    lowered = _lower(func, target)
    checked = declared_cluster(check_options(options, lowered.target), lowered.func)
    check_launch(checked, lowered.func)
    check_programmatic(checked, lowered.func)
    return Kernel(func, checked, lowered, launch_key=launch_key)


def _target_of(target):
    from .target import Target

    return Target(target)


def _launch_cache(func, target, options: dict):
    """``(key, (header, cubin) or None)`` of the launch cache for this compile."""
    from .codegen import cache
    from .knobs import knobs

    if not knobs.cache_enabled:
        return None, None
    from .codegen.cubin import find_ptxas, ptxas_identity

    try:
        # Whether the kernel uses setmaxnreg is unknown before its PTX: the key names the
        # ptxas such a kernel would get, so that another one is never given its old cubin.
        key = hashlib.sha256((cache_key(func.script(), str(_target_of(target)), options)
                              + "launch " + ptxas_identity(find_ptxas())).encode()).hexdigest()
    except (TypeError, TargetError):  # a bad target or options: the compile reports them
        return None, None
    blob = cache.load(key, "launch")
    if blob is None:
        return key, None
    from .runtime.saved import from_bytes

    try:
        return key, from_bytes(blob)
    except Exception:  # noqa: BLE001 - a stale or foreign entry reads as a miss
        return key, None
