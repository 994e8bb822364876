"""Load a kernel from a file (``FILE[:FUNC]``) and run it on random inputs, on the GPU when
one fits the target, else in the simulator, and compare with the example's ``reference``.

An example module provides ``inputs(rng) -> [arrays]`` and ``reference(*arrays) -> [arrays]``
(what every argument must hold afterwards) and optionally ``TARGET``, ``RTOL`` (a relative
tolerance for float results; exact comparison otherwise, bit for bit) and ``ATOL`` (an
absolute one added to it, 0 by default). ``tilewise run --rtol/--atol`` override them. The
result line says which comparison was made; a mismatch gives, per argument, how many
elements lie outside the tolerance and the largest absolute and relative errors.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np

from .errors import TilewiseError


def split_spec(spec: str) -> tuple[pathlib.Path, str]:
    """``FILE[:FUNC]`` -> (path, FUNC or ""). A path that exists as given wins, so a file
    whose name holds ``:`` loads; otherwise the text after the last ``:`` is FUNC."""
    whole = pathlib.Path(spec)
    if whole.is_file():
        return whole, ""
    path, sep, name = spec.rpartition(":")
    if sep and path and pathlib.Path(path).is_file():
        if not name.isidentifier():
            raise TilewiseError(f"{spec!r}: {name!r} after the ':' is not a kernel name",
                                hint="write FILE or FILE:FUNC, FUNC a Python identifier")
        return pathlib.Path(path), name
    if whole.is_dir():
        raise TilewiseError(f"{spec} is a folder, not a Python file",
                            hint="name the file that defines the kernel: FILE[:FUNC]")
    missing = path if sep and path and name.isidentifier() else spec  # ':' in the path
    raise TilewiseError(f"no such file: {missing}",
                        hint="write FILE[:FUNC], FILE a Python file that defines a "
                             "@T.prim_func kernel")


def load(spec: str):
    """``FILE[:FUNC]`` -> (module, PrimFunc): the file is run as a module and its kernel
    (the only one, or the one named FUNC) taken. Whatever goes wrong while the file runs
    (a syntax error, a NameError, ...) is a TilewiseError at the file's line."""
    from .ir import PrimFunc

    p, name = split_spec(spec)
    mod = _run_file(p)
    kernels = {k: v for k, v in vars(mod).items() if isinstance(v, PrimFunc)}
    if name:
        if name not in kernels:
            raise TilewiseError(f"{p} has no kernel named {name!r}",
                                hint="kernels in it: " + (", ".join(kernels) or "none"))
        return mod, kernels[name]
    if len(kernels) != 1:
        raise TilewiseError(f"{p} defines {len(kernels)} kernels; say which with FILE:FUNC",
                            hint="kernels in it: " + (", ".join(kernels) or "none"))
    return mod, next(iter(kernels.values()))


def _run_file(p: pathlib.Path):
    mod_spec = importlib.util.spec_from_file_location(p.stem, p)
    mod = importlib.util.module_from_spec(mod_spec)
    sys.path.insert(0, str(p.parent.resolve()))
    try:
        mod_spec.loader.exec_module(mod)
    except TilewiseError:
        raise
    except SyntaxError as e:
        raise TilewiseError(f"{p} is not valid Python: {e.msg}", user_span(e, str(p)),
                            "fix the syntax error") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's file failed to run
        raise user_failure(e, f"loading {p}", str(p)) from None
    finally:
        sys.path.pop(0)
    return mod


def user_span(exc: BaseException, file: str):
    """The place in ``file`` where ``exc`` happened: a SyntaxError's own, else the last
    frame of its traceback in that file (None when no frame is)."""
    from .errors import Span

    if isinstance(exc, SyntaxError) and exc.lineno:
        return Span(file, exc.lineno, max((exc.offset or 1) - 1, 0),
                    (exc.text or "").rstrip("\n") or None)
    here = None
    tb = exc.__traceback__
    target = str(pathlib.Path(file).resolve())
    while tb is not None:
        code = tb.tb_frame.f_code
        if str(pathlib.Path(code.co_filename).resolve()) == target:
            here = Span(file, tb.tb_lineno, 0)
        tb = tb.tb_next
    return here


def user_failure(exc: BaseException, doing: str, file: str) -> TilewiseError:
    """A TilewiseError for an exception raised by the user's code while ``doing``."""
    what = "sys.exit()" if isinstance(exc, SystemExit) else type(exc).__name__
    detail = f": {exc}" if str(exc) and not isinstance(exc, SystemExit) else ""
    return TilewiseError(f"{doing} raised {what}{detail}", user_span(exc, file),
                         f"fix the error in {pathlib.Path(file).name}")


def gpu_fits(target) -> tuple[bool, str]:
    """Whether a GPU is present and can run code compiled for ``target``."""
    from .target import Target

    from .runtime import device_target, gpu_available

    if not gpu_available():
        return False, "no GPU on this machine"
    if importlib.util.find_spec("torch") is None:
        return False, "torch is not installed (tilewise run moves arrays with it)"
    dev = device_target()
    t = Target(target)
    if not t.runs_on(dev):
        return False, f"the GPU is {dev}, code for {t} cannot run on it"
    return True, f"GPU {dev}"


def execute(func, arrays, target, force_sim=False, perf=False):
    """Run ``func`` on numpy ``arrays`` in place; returns which executor ran it and, with
    ``perf`` (which runs the simulator), its performance counters (else None)."""
    if perf:
        fits, why = False, "--perf asked for"
    else:
        fits, why = (False, "--sim asked for") if force_sim else gpu_fits(target)
    if fits:
        _run_gpu(func, arrays, target)
        return f"GPU ({why})", None
    from .sim import simulate

    report = simulate(func, *arrays, target=target, perf=perf)
    return f"simulator ({why})", report.perf if perf else None


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


def compare(got, want, rtol=None, atol=0.0, names=None) -> list[str]:
    """Mismatch descriptions (empty when every array matches): bit for bit when ``rtol``
    is None, else ``|got - want| <= atol + rtol * |want|`` (NaN matches NaN). Each says how
    many elements are off, the worst of them and the largest absolute and relative
    errors."""
    problems = []
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.ascontiguousarray(w)
        g64, w64 = _float64(g), _float64(w)
        with np.errstate(invalid="ignore", over="ignore"):
            excess = np.abs(g64 - w64) - (atol + (rtol or 0.0) * np.abs(w64))
        if rtol is None:
            raw = np.ascontiguousarray(g).view(np.uint8).reshape(g.shape + (-1,))
            bad = (raw != w.view(np.uint8).reshape(w.shape + (-1,))).any(axis=-1)
        else:
            bad = ~((excess <= 0) | (np.isnan(g64) & np.isnan(w64)))
        n = int(np.count_nonzero(bad))
        if n:
            name = f" ({names[i]})" if names and i < len(names) else ""
            problems.append(f"argument {i}{name}: {n} of {g.size} elements differ"
                            + _errors(g64, w64, bad, excess))
    return problems


def _float64(a: np.ndarray) -> np.ndarray:
    try:
        with np.errstate(invalid="ignore", over="ignore"):  # NaN / Inf bit patterns
            return np.asarray(a).astype(np.float64)
    except (TypeError, ValueError):  # a dtype numpy cannot convert: compare its bits
        return np.asarray(a).view(np.uint8).astype(np.float64)


def _errors(g64, w64, bad, excess) -> str:
    """'; the worst at (i, j): got g, want w; max abs error E, max rel error R' (over every
    element; NaNs counted apart)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        err = np.abs(g64 - w64)
        rel = err / np.abs(w64)
    nan = np.isnan(err)
    score = np.where(bad, np.where(np.isnan(excess), np.inf, excess), -np.inf)
    k = np.unravel_index(int(np.argmax(score)), score.shape)
    out = f"; the worst at ({', '.join(map(str, k))}): got {g64[k]:.6g}, want {w64[k]:.6g}"
    if not nan.all():
        finite = ~nan
        out += (f"; max abs error {err[finite].max():.4g}, max rel error "
                f"{np.nanmax(np.where(finite & np.isfinite(rel), rel, np.nan)):.4g}"
                if np.isfinite(rel[finite]).any() else f"; max abs error {err[finite].max():.4g}")
    if nan.any():
        out += f"; {int(np.count_nonzero(nan))} element(s) NaN in one of the two"
    return out


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


def run_example(mod, func, target, force_sim=False, seed=0, rtol=None, atol=None,
                perf=False) -> bool:
    """Run ``func`` on the module's ``inputs(rng)`` (random arrays by the kernel's buffers
    when it has none) and compare with ``reference`` when the module defines one, with
    ``rtol``/``atol`` if given, else the module's ``RTOL``/``ATOL``; ``perf``: in the
    simulator, printing its performance counters after the result."""
    rng = np.random.default_rng(seed)
    file = mod.__file__
    arrays = (_call_user(mod, "inputs", rng) if hasattr(mod, "inputs")
              else random_inputs(func, rng))
    if not isinstance(arrays, (list, tuple)):
        raise TilewiseError(f"inputs(rng) in {file} returned {type(arrays).__name__}; it must "
                            "return a list with one argument per kernel parameter",
                            hint="return [array, ...] (numpy arrays, numbers for scalars)")
    arrays = list(arrays)
    has_ref = hasattr(mod, "reference")
    if has_ref:
        want = _call_user(mod, "reference",
                          *[a.copy() if isinstance(a, np.ndarray) else a for a in arrays])
    rtol, atol = tolerances(mod, rtol, atol)
    where, counters = execute(func, arrays, target, force_sim, perf)
    head = f"{func.name} on {where}, target {target}: "
    got = [a for a in arrays if isinstance(a, np.ndarray)]
    if not has_ref:
        sums = ", ".join(f"{b.name}: {a.astype(np.float64).sum():.6g}"
                         for b, a in zip(func.param_buffers(), got))
        print(head + f"ran; no reference() in the file to compare with (sums {sums})")
    else:
        names = [b.name for b in func.param_buffers()]
        problems = compare(got, _expected(want, got, func, file), rtol, atol, names)
        how = "bit for bit" if rtol is None else f"within rtol={rtol:g}, atol={atol:g}"
        print(head + (f"OK, matches the reference {how}" if not problems else
                      f"MISMATCH (compared {how}): " + "; ".join(problems)))
    if counters is not None:
        print(counters)
    return not has_ref or not problems


def tolerances(mod, rtol=None, atol=None) -> tuple:
    """(rtol, atol) of a comparison: the given ones (``--rtol/--atol``), else the module's
    ``RTOL``/``ATOL``; rtol None (and atol 0) is bit for bit. An atol alone compares with
    rtol 0."""
    rtol = _tolerance(mod, "RTOL", None) if rtol is None else rtol
    atol = _tolerance(mod, "ATOL", 0.0) if atol is None else atol
    if rtol is None and atol:
        rtol = 0.0
    return rtol, atol or 0.0


def _call_user(mod, name, *args):
    """``mod.name(*args)``; an exception in it is the user's, reported at their line."""
    try:
        return getattr(mod, name)(*args)
    except TilewiseError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's function failed
        raise user_failure(e, f"{name}() in {mod.__file__}", mod.__file__) from None


def _tolerance(mod, name: str, default):
    """``mod.RTOL`` / ``mod.ATOL``: a number >= 0 (``default`` when the module has none)."""
    tol = getattr(mod, name, default)
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float))
                            or not tol >= 0):
        usage = ("or no RTOL for a bit-exact comparison" if name == "RTOL" else
                 "added to RTOL's bound; or no ATOL")
        raise TilewiseError(f"{name} in {mod.__file__} is {tol!r}; it must be a number >= 0",
                            hint=f"e.g. {name} = 1e-5, {usage}")
    return tol


def _expected(want, got, func, file) -> list:
    """reference()'s arrays, checked: one per array argument, each of its shape and dtype."""
    if not isinstance(want, (list, tuple)):
        raise TilewiseError(f"reference() in {file} returned {type(want).__name__}; it must "
                            "return a list with what every argument holds afterwards",
                            hint="return [array, ...] in parameter order")
    arrays = [np.asarray(w) if not np.isscalar(w) else w for w in want]
    arrays = [w for w in arrays if isinstance(w, np.ndarray)]
    names = [b.name for b in func.param_buffers()]
    if len(arrays) != len(got):
        raise TilewiseError(f"reference() in {file} returned {len(arrays)} array(s), the kernel "
                            f"takes {len(got)} ({', '.join(names)})",
                            hint="return one array per buffer argument, in parameter order "
                                 "(what each holds after the kernel)")
    for name, g, w in zip(names, got, arrays):
        if w.shape != g.shape or w.dtype != g.dtype:
            raise TilewiseError(f"reference() in {file} returned {w.dtype}{list(w.shape)} for "
                                f"{name!r}, which is {g.dtype}{list(g.shape)}",
                                hint=f"return {name!r}'s expected contents with its shape "
                                     f"and dtype (convert with .astype to {g.dtype})")
    return arrays
