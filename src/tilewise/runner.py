"""Load a kernel from a file (``FILE[:FUNC]``) and run it on random inputs, on the GPU when
one fits the target, else in the simulator, and compare with the example's ``reference``.

An example module provides ``inputs(rng) -> [arrays]`` and ``reference(*arrays) -> [arrays]``
(what every argument must hold afterwards) and optionally ``TARGET``, ``RTOL`` (a relative
tolerance for float results; exact comparison otherwise, bit for bit) and ``ATOL`` (an
absolute one added to it, 0 by default).
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np

from .errors import TilewiseError


def load(spec: str):
    """``FILE[:FUNC]`` -> (module, PrimFunc): the file is run as a module and its kernel
    (the only one, or the one named FUNC) taken."""
    from .ir import PrimFunc

    path, _, name = spec.partition(":")
    p = pathlib.Path(path)
    if not p.is_file():
        raise TilewiseError(f"no such file: {path}")
    mod_spec = importlib.util.spec_from_file_location(p.stem, p)
    mod = importlib.util.module_from_spec(mod_spec)
    sys.path.insert(0, str(p.parent.resolve()))
    try:
        mod_spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    kernels = {k: v for k, v in vars(mod).items() if isinstance(v, PrimFunc)}
    if name:
        if name not in kernels:
            raise TilewiseError(f"{path} has no kernel named {name!r}",
                                hint="kernels in it: " + (", ".join(kernels) or "none"))
        return mod, kernels[name]
    if len(kernels) != 1:
        raise TilewiseError(f"{path} defines {len(kernels)} kernels; say which with FILE:FUNC",
                            hint="kernels in it: " + (", ".join(kernels) or "none"))
    return mod, next(iter(kernels.values()))


def gpu_fits(target) -> tuple[bool, str]:
    """Whether a GPU is present and can run code compiled for ``target``."""
    from .target import Target

    from .runtime import device_target, gpu_available

    if not gpu_available():
        return False, "no GPU on this machine"
    dev = device_target()
    t = Target(target)
    if not t.runs_on(dev):
        return False, f"the GPU is {dev}, code for {t} cannot run on it"
    return True, f"GPU {dev}"


def execute(func, arrays, target, force_sim=False) -> str:
    """Run ``func`` on numpy ``arrays`` in place; returns which executor ran it."""
    fits, why = (False, "--sim asked for") if force_sim else gpu_fits(target)
    if fits:
        _run_gpu(func, arrays, target)
        return f"GPU ({why})"
    from .sim import simulate

    simulate(func, *arrays, target=target)
    return f"simulator ({why})"


def _run_gpu(func, arrays, target):
    import torch

    from .compiler import compile as tw_compile

    kernel = tw_compile(func, target=target)
    dev = [_to_torch(torch, a).cuda() if isinstance(a, np.ndarray) else a for a in arrays]
    kernel(*dev)
    torch.cuda.synchronize()
    for a, d in zip(arrays, dev):
        if isinstance(a, np.ndarray):
            a[...] = _from_torch(torch, d).view(a.dtype).reshape(a.shape)


_TORCH_NARROW = {"bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3fn",
                 "float8_e5m2": "float8_e5m2"}


def _to_torch(torch, a):
    """A torch tensor with the same bytes and dtype (bfloat16/fp8 cross as raw ints)."""
    a = np.ascontiguousarray(a)
    name = _TORCH_NARROW.get(a.dtype.name)
    if name is None:
        return torch.from_numpy(a)
    raw = {1: np.uint8, 2: np.int16}[a.dtype.itemsize]
    return torch.from_numpy(a.view(raw)).view(getattr(torch, name))


def _from_torch(torch, t):
    t = t.cpu()
    if str(t.dtype).removeprefix("torch.") in _TORCH_NARROW.values():
        t = t.view(torch.uint8 if t.element_size() == 1 else torch.int16)
    return t.numpy()


def compare(got, want, rtol=None, atol=0.0) -> list[str]:
    """Mismatch descriptions (empty when every array matches)."""
    problems = []
    for i, (g, w) in enumerate(zip(got, want)):
        if rtol is None:
            same = np.array_equal(g.view(np.uint8), np.ascontiguousarray(w).view(np.uint8))
        else:
            same = np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
        if not same:
            bad = np.count_nonzero(g != w)
            problems.append(f"argument {i}: {bad} of {g.size} elements differ")
    return problems


def random_bits(rng, shape, dtype, fill: int | None = None) -> np.ndarray:
    """An array of ``dtype`` (a tilewise dtype name) holding random bytes — every bit
    pattern, NaNs included, which is what a copy must preserve — or the byte ``fill``."""
    from .ir.dtype import dtype as tw_dtype

    np_dt = tw_dtype(dtype).numpy()
    n = int(np.prod(shape)) * np_dt.itemsize
    raw = (rng.integers(0, 256, n, dtype=np.uint8) if fill is None
           else np.full(n, fill, dtype=np.uint8))
    return raw.view(np_dt).reshape(shape)


SYMBOLIC_EXTENT = 100  # what ``tilewise run`` gives a symbolic size without inputs()


def random_inputs(func, rng) -> list:
    """One argument per kernel parameter: a random array per buffer (normal floats,
    uniform ints/bools; a symbolic size becomes SYMBOLIC_EXTENT, the array contiguous),
    a small random number per scalar parameter."""
    from .ir.signature import declared_params

    by_param = {id(p): b for p, b in func.buffer_map}
    out = []
    for p in declared_params(func):
        b = by_param.get(id(p))
        out.append(_random_array(b, rng) if b is not None else _random_scalar(p.dtype, rng))
    return out


def _random_array(b, rng):
    dt = b.dtype.numpy()
    shape = tuple(s if isinstance(s, int) else SYMBOLIC_EXTENT for s in b.shape)
    if b.dtype.is_float:
        return rng.standard_normal(shape).astype(dt)
    if b.dtype.kind == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def _random_scalar(t, rng):
    if t.is_float:
        return float(rng.standard_normal())
    if t.kind == "bool":
        return bool(rng.integers(0, 2))
    return int(rng.integers(1, 17))


def run_example(mod, func, target, force_sim=False, seed=0) -> bool:
    """Run ``func`` on the module's ``inputs(rng)`` (random arrays by the kernel's buffers
    when it has none) and compare with ``reference`` when the module defines one."""
    rng = np.random.default_rng(seed)
    arrays = mod.inputs(rng) if hasattr(mod, "inputs") else random_inputs(func, rng)
    want = None
    if hasattr(mod, "reference"):
        want = mod.reference(*[a.copy() if isinstance(a, np.ndarray) else a for a in arrays])
    where = execute(func, arrays, target, force_sim)
    head = f"{func.name} on {where}, target {target}: "
    if want is None:
        sums = ", ".join(f"{b.name}: {a.astype(np.float64).sum():.6g}"
                         for b, a in zip(func.param_buffers(),
                                         [x for x in arrays if isinstance(x, np.ndarray)]))
        print(head + f"ran; no reference() in the file to compare with (sums {sums})")
        return True
    problems = compare([a for a in arrays if isinstance(a, np.ndarray)],
                       [w for w in want if isinstance(w, np.ndarray)], getattr(mod, "RTOL", None),
                       getattr(mod, "ATOL", 0.0))
    print(head + ("OK, matches the reference" if not problems else
                  "MISMATCH: " + "; ".join(problems)))
    return not problems
