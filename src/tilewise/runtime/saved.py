"""Saved kernels: ``k.save(path)`` and ``tw.load(path)``.

A saved kernel is one file: the magic ``TWKERNEL``, a little-endian u32 length, a JSON
header of that length, then the cubin. The header holds everything a launch needs and
nothing it must compile: the tilewise version and the file format, the target, the PTX
entry name, dynamic shared memory, the compile options the launch reads (cluster shape,
non-portable clusters), the grid / block / cluster (sizes as expressions of the symbolic
sizes), every parameter in order (arrays: buffer name, dtype, shape and strides as size
expressions; scalars: name and dtype), the symbolic sizes, the TMA tensor maps (which
buffer, box, swizzle, fill, L2 promotion, extents and strides as size expressions) and
the cubin's SHA-256. The options are all of the compile's (checked) options.

:func:`load` rebuilds the kernel's *signature* as IR nodes (a ``PrimFunc`` whose body is
empty, with its buffers, size variables and tensor maps) so that the launcher's argument
checks, size binding, grid and tensor-map encoding are the same code for a compiled and
a loaded kernel. It imports no LLVM, parses no Python, and refuses a file of another
format version, a damaged cubin, or (with a GPU present) another GPU's target, each with a
:class:`~tilewise.errors.LaunchError` that says what to do.
"""

from __future__ import annotations

import hashlib
import json
import struct

from ..errors import LaunchError

MAGIC = b"TWKERNEL"
FORMAT = 1  # bumped whenever a reader of the previous format would misread the file


# -- size expressions <-> JSON -----------------------------------------------------------
def _expr_to_json(e, sizes: dict):
    from ..ir.expr import BinOp, Cast, IntImm, SizeVar, UnaryOp

    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return {"int": e.value, "dtype": e.dtype.name}
    if isinstance(e, SizeVar):
        return {"size": sizes[e.name]}
    if isinstance(e, BinOp):
        return {"op": e.op, "a": _expr_to_json(e.a, sizes), "b": _expr_to_json(e.b, sizes)}
    if isinstance(e, UnaryOp):
        return {"unary": e.op, "a": _expr_to_json(e.a, sizes)}
    if isinstance(e, Cast):
        return {"cast": e.dtype.name, "value": _expr_to_json(e.value, sizes)}
    raise LaunchError(f"cannot save a launch that depends on {type(e).__name__} expressions",
                      hint="declare shapes and the grid from sizes with + - * // %")


def _expr_from_json(j, sizes: list):
    from ..ir import dtype as dt
    from ..ir.expr import BinOp, Cast, IntImm, UnaryOp

    if isinstance(j, int):
        return j
    if "int" in j:
        return IntImm(j["int"], dt.dtype(j["dtype"]))
    if "size" in j:
        return sizes[j["size"]]
    if "op" in j:
        return BinOp(j["op"], _expr_from_json(j["a"], sizes), _expr_from_json(j["b"], sizes))
    if "unary" in j:
        return UnaryOp(j["unary"], _expr_from_json(j["a"], sizes))
    return Cast(dt.dtype(j["cast"]), _expr_from_json(j["value"], sizes))


# -- the header ---------------------------------------------------------------------------
def describe(kernel) -> dict:
    """The JSON header of a compiled kernel (its cubin built first)."""
    from .._version import __version__
    from ..ir import signature as sig

    func, flat = kernel.func, kernel.launch_signature.func
    size_vars = list(func.attr("size_vars", ()))  # the order the launcher passes them
    # by name, as the parameters below: a launch-cache signature holds rebuilt SizeVars
    sizes = {v.name: i for i, v in enumerate(size_vars)}
    by_param = {id(p): b for p, b in func.buffer_map}
    # by name: the flat program may be the launch cache's rebuilt signature (new Vars)
    index = {p.name: i for i, p in enumerate(sig.declared_params(func))}
    params = []
    for p in sig.declared_params(func):
        buf = by_param.get(id(p))
        if buf is None:
            params.append({"name": p.name, "dtype": p.dtype.name})
            continue
        params.append({"name": p.name, "buffer": buf.name, "dtype": buf.dtype.name,
                       "shape": [_expr_to_json(s, sizes) for s in buf.shape],
                       "strides": None if buf.strides is None else
                       [_expr_to_json(s, sizes) for s in buf.strides]})
    maps = [{"param": index[m.buffer.data.name], "dtype": m.spec.dtype,
             "elem_bytes": m.spec.elem_bytes, "box": list(m.spec.box),
             "dims": [_expr_to_json(d, sizes) for d in m.spec.dims],
             "strides": [_expr_to_json(s, sizes) for s in m.spec.strides],
             "swizzle": m.spec.swizzle, "oob": m.spec.oob,
             "l2_promotion": m.spec.l2_promotion} for m in flat.attr("tensor_maps", ())]
    lc = flat.launch_config
    options = {k: list(v) if isinstance(v, tuple) else v for k, v in kernel.options.items()}
    cubin = kernel.cubin
    return {"format": FORMAT, "tilewise": __version__, "kernel": func.name,
            "target": str(kernel.target), "entry": kernel.name,
            "dynamic_smem": kernel.dynamic_smem, "options": options,
            "grid": [_expr_to_json(g, sizes) for g in lc.grid], "block": lc.block,
            "cluster": list(lc.cluster), "params": params,
            "sizes": [{"name": v.name, "dtype": v.dtype.name} for v in size_vars],
            "tensor_maps": maps, "asserts": [list(a) for a in kernel.asserts],
            "cubin_sha256": hashlib.sha256(cubin).hexdigest()}


def to_bytes(kernel) -> bytes:
    """The saved form of a compiled kernel (a launch-cache hit's own header as it was)."""
    saved = getattr(kernel, "_saved", None)
    header = saved[0] if saved is not None else describe(kernel)
    return _pack(header, kernel.cubin)


def _pack(header: dict, cubin: bytes) -> bytes:
    text = json.dumps(header, sort_keys=True).encode()
    return MAGIC + struct.pack("<I", len(text)) + text + cubin


def save(kernel, path) -> None:
    """Write ``kernel`` (a compiled :class:`~tilewise.compiler.Kernel`) to ``path``."""
    from ..codegen.cache import atomic_write

    atomic_write(str(path), to_bytes(kernel))


def read(path) -> tuple[dict, bytes]:
    """The header and the cubin of a saved kernel, checked."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise LaunchError(f"cannot read the saved kernel {path}: {e.strerror or e}") from None
    return from_bytes(blob, path)


def from_bytes(blob: bytes, path="the saved kernel") -> tuple[dict, bytes]:
    """The header and the cubin of a saved kernel's bytes, checked."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 4:
        raise LaunchError(f"{path} is not a saved tilewise kernel",
                          hint="save one with k.save(path) or `tilewise compile FILE:FUNC "
                          "--save OUT`")
    (n,) = struct.unpack_from("<I", blob, len(MAGIC))
    start = len(MAGIC) + 4
    try:
        header = json.loads(blob[start:start + n])
    except ValueError:
        raise LaunchError(f"{path}: the saved kernel's header is damaged",
                          hint="save the kernel again") from None
    cubin = blob[start + n:]
    _check_header(path, header, cubin)
    return header, cubin


def _check_header(path, header: dict, cubin: bytes) -> None:
    from .._version import __version__

    if header.get("format") != FORMAT:
        raise LaunchError(f"{path} was saved by tilewise {header.get('tilewise', '?')} in "
                          f"format {header.get('format')}; this tilewise ({__version__}) "
                          f"reads format {FORMAT}",
                          hint="compile and save the kernel again with this tilewise")
    if hashlib.sha256(cubin).hexdigest() != header.get("cubin_sha256"):
        raise LaunchError(f"{path}: the cubin does not match its checksum (truncated or "
                          "damaged)", hint="save the kernel again")


# -- the signature as IR ----------------------------------------------------------------
def signature_func(header: dict):
    """A ``PrimFunc`` with the saved kernel's parameters, buffers, size variables, launch
    and tensor maps, and an empty body: what the launcher reads of a kernel."""
    from ..ir import dtype as dt
    from ..ir.expr import SizeVar, Var
    from ..ir.stmt import Buffer, PrimFunc, SeqStmt, ThreadBinding
    from ..ptx.tma import TensorMapParam, TensorMapSpec

    sizes = [SizeVar(s["name"], dt.dtype(s["dtype"])) for s in header["sizes"]]
    params, buffer_map = [], []
    for p in header["params"]:
        if "buffer" not in p:
            params.append(Var(p["name"], dt.dtype(p["dtype"])))
            continue
        var = Var(p["name"], dt.handle)
        shape = tuple(_expr_from_json(s, sizes) for s in p["shape"])
        strides = None if p["strides"] is None else tuple(
            _expr_from_json(s, sizes) for s in p["strides"])
        buffer_map.append((var, Buffer(p["buffer"], shape, dt.dtype(p["dtype"]), "global",
                                       data=var, strides=strides)))
        params.append(var)
    by_param = {id(v): b for v, b in buffer_map}
    maps = []
    for i, m in enumerate(header["tensor_maps"]):
        spec = TensorMapSpec(m["dtype"], m["elem_bytes"],
                             tuple(_expr_from_json(d, sizes) for d in m["dims"]),
                             tuple(_expr_from_json(s, sizes) for s in m["strides"]),
                             tuple(m["box"]), m["swizzle"], m["oob"], m["l2_promotion"])
        maps.append(TensorMapParam(Var(f"tmap{i}", dt.tensormap),
                                   by_param[id(params[m["param"]])], spec))
    grid = tuple(_expr_from_json(g, sizes) for g in header["grid"])
    launch = tuple(ThreadBinding(Var(f"b{d}"), "cta_id", grid, d) for d in range(3))
    launch += (ThreadBinding(Var("t"), "thread_id", (header["block"],)),)
    launch += tuple(ThreadBinding(Var(f"c{d}"), "cta_id_in_cluster", tuple(header["cluster"]),
                                  d) for d in range(3))
    attrs = (("size_vars", tuple(sizes)), ("tensor_maps", tuple(maps)))
    return PrimFunc(header["kernel"], tuple(params) + tuple(sizes) + tuple(m.var for m in maps),
                    tuple(buffer_map), launch, SeqStmt(()), attrs)


def options_of(header: dict) -> dict:
    """The compile options a saved header records (lists back to tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in header["options"].items()}


class Signature:
    """What the launcher reads of a lowered program (``kernel.launch_signature``): ``func``
    (parameters, sizes, grid, tensor maps) and ``target``."""

    def __init__(self, func, target):
        self.func, self.target = func, target

    @classmethod
    def of(cls, header: dict, target=None) -> Signature:
        from ..target import Target

        return cls(signature_func(header), target or Target(header["target"]))


class LoadedKernel:
    """A kernel read from a file by :func:`load`: launch it as ``k(*arrays, stream=None)``
    like a compiled one (the same checks); ``k.cubin``, ``k.name``, ``k.target``,
    ``k.launch_config``, ``k.header`` (the saved description); ``k.save(path)``."""

    loaded = True

    def __init__(self, header: dict, cubin: bytes, path=None):
        from ..target import Target

        self.header, self.cubin, self.path = header, cubin, path
        self.target = Target(header["target"])
        self.launch_signature = Signature.of(header, self.target)
        self.func = self.launch_params = self.launch_signature.func
        self.options = options_of(header)
        self.name, self.dynamic_smem = header["entry"], header["dynamic_smem"]
        self.asserts = [tuple(a) for a in header.get("asserts", ())]
        self._launcher = None

    @property
    def launch_config(self):
        return self.func.launch_config

    def __call__(self, *arrays, stream=None):
        if self._launcher is None:
            from .launch import Launcher

            self._launcher = Launcher(self)
        return self._launcher(arrays, stream)

    def save(self, path) -> None:
        from ..codegen.cache import atomic_write

        atomic_write(str(path), _pack(self.header, self.cubin))

    def source(self, stage: str = "ptx"):
        raise LaunchError(f"a loaded kernel carries its cubin only, not its {stage}",
                          hint="compile the @T.prim_func to see its stages")

    def __repr__(self) -> str:
        return f"<tilewise.LoadedKernel {self.header['kernel']} for {self.target}>"


def load(path, check_device: bool = True) -> LoadedKernel:
    """Read a kernel saved by ``k.save(path)``. With a GPU present (and ``check_device``),
    a kernel whose target cannot run on it is refused here, before any launch."""
    header, cubin = read(path)
    k = LoadedKernel(header, cubin, path)
    if check_device:
        from .device import device_target, gpu_available

        if gpu_available():
            have = device_target()
            if not k.target.runs_on(have):
                raise LaunchError(f"{path} holds a kernel for {k.target}, which cannot run on "
                                  f"this GPU ({have})",
                                  hint=f"compile and save it with target={str(have)!r}")
    return k
