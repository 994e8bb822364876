"""What each ``T.*`` name does when the parser meets a call to it."""

from __future__ import annotations

import inspect
import numbers

from ..errors import ScriptError, TilewiseError
from ..ir import dtype as dt
from ..ir.expr import (AddressOf, BufferLoad, BufferRegion, IntImm, Range, SizeVar, Var,
                       binop, cast, const)
from ..ir.launch import CTA_KINDS
from ..ir.stmt import (SCOPES, THREAD_KINDS, Buffer, DeclBuffer, LetStmt, ThreadBinding,
                       TileCall)
from ..ptx import table as ptx_table
from . import typerules as tr
from .inline import BoundInline, InlineFunction, is_meta_class, is_meta_object
from .namespace import Builtin, PtxPath, TilePrimitiveRef, TypeCtor
from .values import LoopRange as _LoopRange
from .values import describe as _describe
from .values import is_ir, is_scalar

_HANDLERS: dict = {}


def handler(name):
    def deco(fn):
        _HANDLERS[name] = fn
        return fn

    return deco


def call(p, fn, args, kwargs, node):
    """Dispatch a call by what the callee evaluated to."""
    if isinstance(fn, TypeCtor):
        return _type_ctor(p, fn.dtype, args, kwargs)
    if isinstance(fn, Builtin):
        try:
            return fn.handler(p, args, kwargs)
        except (TypeError, ValueError) as e:  # an argument no check above foresaw
            raise p.error(f"T.{fn.name} cannot take these arguments: {e}",
                          "see the function's arguments in docs/ir.md") from None
    if isinstance(fn, PtxPath):
        op = fn.op
        if op is None:
            raise p.error(f"T.{fn._path} is a group of instructions, not one",
                          "call one of its members, e.g. T.ptx.cp_async.commit_group()")
        return op.call(args, kwargs, p.span())
    if isinstance(fn, TilePrimitiveRef):
        return _tile_call(p, fn, args, kwargs)
    if isinstance(fn, _BoundMethod):
        return fn(p, args, kwargs)
    if isinstance(fn, (InlineFunction, BoundInline)):
        return p.inline_call(fn.fn, (fn.obj, *args), kwargs) if isinstance(fn, BoundInline) \
            else p.inline_call(fn, args, kwargs)
    if is_meta_class(fn):
        return p.new_meta_object(fn, args, kwargs)
    if inspect.ismethod(fn) and is_meta_object(fn.__self__):
        return p.run_python(fn, args, kwargs)
    if fn is range:
        return _range(p, args, kwargs, "serial")
    if fn in (min, max) and any(is_ir(a) for a in args):
        return _minmax(p, fn.__name__, args)
    if any(is_ir(a) or isinstance(a, Buffer) for a in list(args) + list(kwargs.values())):
        raise p.error(f"the Python function {getattr(fn, '__name__', fn)!r} cannot take "
                      f"run-time values", "only T.* functions run on the device; decorate a "
                      "helper with @T.inline to pass it run-time values")
    if not callable(fn):
        raise p.error(f"{_describe(fn)} is not callable")
    try:
        return fn(*args, **kwargs)
    except TilewiseError:
        raise
    except Exception as e:
        raise p.error(f"calling {getattr(fn, '__name__', fn)!r} at compile time failed: "
                      f"{type(e).__name__}: {e}") from None


def _arity(p, name, args, kwargs, lo, hi=None, allowed=()):
    hi = lo if hi is None else hi
    if not lo <= len(args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise p.error(f"T.{name} takes {want} positional argument(s), got {len(args)}")
    for k in kwargs:
        if k not in allowed:
            raise p.error(f"T.{name} has no keyword {k!r}",
                          f"its keywords are: {', '.join(allowed)}" if allowed else
                          "it takes no keywords")


def _type_ctor(p, t, args, kwargs):
    if not args and not kwargs:
        return _size_var(p, t)
    _arity(p, t.name, args, kwargs, 1)
    v = args[0]
    if is_ir(v):
        return cast(t, v)
    if is_scalar(v):
        if t.is_int and isinstance(v, float):
            raise p.error(f"T.{t.name}({v!r}): a float cannot be an integer constant",
                          f'write T.cast({v!r}, "{t.name}") to convert it')
        return tr.literal(p, v, t, f"T.{t.name}")
    raise p.error(f"T.{t.name} cannot convert {_describe(v)}")


def _size_var(p, t):
    """``M = T.int32()`` in the kernel, before ``T.device_entry()``: a symbolic size."""
    if t.name not in ("int32", "int64"):
        raise p.error(f"T.{t.name}() cannot be a symbolic size", "use T.int32() or T.int64()")
    if p.entered or p.depth:
        raise p.error("a symbolic size T.int32() must be declared before T.device_entry()",
                      "declare it with the T.match_buffer lines, or outside the kernel")
    v = SizeVar(p.assign_name or "n", t, span=p.span())
    p.add_size_var(v)
    return v


def _shape(p, shape, what, symbolic: bool = False):
    if isinstance(shape, int) or is_ir(shape):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise p.error(f"the shape of {what} must be a tuple of ints, got {_describe(shape)}")
    out = []
    for s in shape:
        if is_ir(s) and symbolic:
            out.append(_symbolic_extent(p, s, what))
            continue
        if is_ir(s):
            raise p.error(f"the shape of {what} must be known at compile time",
                          "use Python ints or constants from the enclosing scope; only "
                          "T.match_buffer takes symbolic sizes (M = T.int32())")
        if not isinstance(s, int) or isinstance(s, bool) or s <= 0:
            raise p.error(f"the shape of {what} has an invalid extent {s!r}",
                          "every extent must be a positive int")
        out.append(s)
    return tuple(out)


def _symbolic_extent(p, e, what):
    """A shape or stride expression of symbolic sizes only (``M``, ``M * 2``)."""
    from ..ir.visitor import walk

    bad = []
    walk(e, lambda n: bad.append(n) if isinstance(n, Var) and not isinstance(n, SizeVar)
         else None)
    if bad or not e.dtype.is_int:
        raise p.error(f"the shape of {what} may use symbolic sizes (M = T.int32()) but not "
                      f"{_describe(bad[0]) if bad else _describe(e)}",
                      "declare the size with M = T.int32() outside the kernel or before "
                      "T.device_entry()")
    return e


def _dtype(p, v):
    try:
        return dt.dtype(v.dtype if isinstance(v, TypeCtor) else v)
    except ScriptError as e:
        raise p.error(e.message, e.hint) from None


def _layout(p, layout, shape, what, scope=None):
    if layout is None:
        return None
    from ..layout import TileLayout

    if not isinstance(layout, TileLayout):
        try:
            layout = TileLayout(layout)
        except TilewiseError:
            raise
        except Exception:
            raise p.error(f"layout= of {what} must be a TileLayout, got {_describe(layout)}",
                          "write layout=TileLayout(S[...])") from None
    size = 1
    for s in shape:
        size *= s
    if layout.size() != size:
        raise p.error(f"the layout of {what} covers {layout.size()} elements but the shape "
                      f"{shape} has {size}", "make the layout's extents match the shape")
    if scope is not None and scope != "tmem":
        _check_placement(p, layout, scope, what)
    return layout


_CHECKED_ELEMENTS = 1 << 22  # larger buffers fail the memory limits, or are global arrays


def _check_placement(p, layout, scope, what):
    """A memory buffer's layout places elements at memory offsets (axis m): registers
    (scope local) may also name the threads holding them; nothing names tensor memory; no
    two elements share a place."""
    allowed = ("memory", "thread") if scope == "local" else ("memory",)
    foreign = [a.name for a in layout.axes() if a.kind not in allowed]
    if foreign:
        where = "registers" if scope == "local" else f"{scope} memory"
        raise p.error(f"the layout of {what} uses axis {foreign[0]!r}, which has no meaning "
                      f"for a buffer in {where}: its layout maps elements to memory offsets "
                      "(axis m)" + (" and the threads that hold them" if scope == "local" else ""),
                      "tensor-memory layouts (TLane/TCol) belong to T.decl_buffer(..., "
                      "scope=\"tmem\"); write e.g. layout=TileLayout(S[(128, 32)])")
    if layout.size() <= _CHECKED_ELEMENTS and not layout.is_injective():
        raise p.error(f"the layout of {what} puts several elements at one place "
                      f"{_collision(layout)}", "give every element its own offset (strides "
                      "that do not overlap, none of them 0)")


def _collision(layout) -> str:
    """'(elements 1 and 64 both at m=1)' for a layout that is not injective."""
    import numpy as np

    places = layout.apply_np(np.arange(layout.size(), dtype=np.int64))
    keys = np.stack([places[k] for k in sorted(places)], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    dup = int(np.flatnonzero(first[inverse.reshape(-1)] != np.arange(layout.size()))[0])
    at = ", ".join(f"{k}={int(places[k][dup])}" for k in sorted(places))
    return f"(elements {int(first[inverse.reshape(-1)][dup])} and {dup} both at {at})"


def _name(p, default):
    return p.assign_name or default


# ------------------------------------------------------------------ header and launch
@handler("match_buffer")
def _match_buffer(p, args, kwargs):
    _arity(p, "match_buffer", args, kwargs, 2, 3, ("dtype", "layout", "strides"))
    if p.entered:
        raise p.error("T.match_buffer must come before T.device_entry()")
    handle, shape = args[0], args[1]
    dtype = args[2] if len(args) > 2 else kwargs.get("dtype", "float32")
    if not isinstance(handle, Var) or handle not in p.params:
        raise p.error("the first argument of T.match_buffer must be a kernel parameter")
    if any(h is handle for h, _ in p.buffer_map):
        raise p.error(f"parameter {handle.name!r} is matched twice")
    shape = _shape(p, shape, "T.match_buffer", symbolic=True)
    strides = _strides(p, kwargs.get("strides"), shape)
    symbolic = any(is_ir(s) for s in shape + (strides or ()))
    if symbolic and kwargs.get("layout") is not None:
        raise p.error("a buffer with symbolic sizes cannot also take a layout=",
                      "give symbolic buffers strides= (row-major by default)")
    layout = _layout(p, kwargs.get("layout"), shape, "T.match_buffer", "global")
    buf = Buffer(_name(p, handle.name), shape, _dtype(p, dtype), "global", layout, data=handle,
                 strides=strides, span=p.span())
    p.buffer_map.append((handle, buf))
    return buf


def _strides(p, strides, shape):
    """``strides=`` of a global buffer in elements (compile-time ints or symbolic sizes);
    None means row-major."""
    if strides is None:
        return None
    out = _shape(p, strides, "strides=", symbolic=True)
    if len(out) != len(shape):
        raise p.error(f"strides= has {len(out)} entries for a {len(shape)}-dimensional buffer")
    return out


@handler("device_entry")
def _device_entry(p, args, kwargs):
    _arity(p, "device_entry", args, kwargs, 0)
    if p.entered:
        raise p.error("T.device_entry() is called twice")
    if p.depth:
        raise p.error("T.device_entry() must be at the top level of the kernel")
    p.entered = True
    return None


def _launch(kind):
    def h(p, args, kwargs):
        _arity(p, kind, args, kwargs, 1)
        if p.depth:
            raise p.error(f"T.{kind} must be declared at the top level of the kernel")
        if not p.entered:
            raise p.error(f"T.{kind} must come after T.device_entry()")
        if any(b.kind == kind for b in p.launch):
            raise p.error(f"T.{kind} is declared twice")
        ext = args[0]
        if isinstance(ext, int) or is_ir(ext):
            ext = [ext]
        symbolic = kind in ("cta_id", "cluster_id")
        ok = isinstance(ext, (list, tuple)) and 0 < len(ext) <= (3 if kind in CTA_KINDS else 1)
        if ok:
            ext = [_symbolic_extent(p, e, f"T.{kind}") if is_ir(e) and symbolic else e
                   for e in ext]
            ok = all((is_ir(e) and symbolic) or (
                isinstance(e, int) and not isinstance(e, bool) and e > 0) for e in ext)
        if not ok:
            most = "up to 3" if kind in CTA_KINDS else "one"
            what = "positive int(s) or symbolic size expression(s)" if symbolic else \
                "positive compile-time int(s)"
            raise p.error(f"T.{kind} takes a list of {most} {what}, "
                          f"got {_describe(ext) if not isinstance(ext, (list, tuple)) else ext}",
                          f"write T.{kind}([n])")
        vars_ = []
        for d in range(len(ext)):
            name = _launch_name(p, kind, d, len(ext))
            v = Var(name, dt.int32, span=p.span())
            p.launch.append(ThreadBinding(v, kind, tuple(ext), d, span=p.span()))
            vars_.append(v)
        return vars_[0] if len(vars_) == 1 else tuple(vars_)

    return h


def _launch_name(p, kind: str, d: int, dims: int) -> str:
    """The name of launch variable ``d`` of ``dims``: the user's (``bm = T.cta_id([n])``,
    ``bn, bm = T.cta_id([x, y])``), else ``cta_id`` / ``cta_id_y``."""
    if dims == 1 and p.assign_name:
        return p.assign_name
    names = p.assign_names or ()
    if len(names) == dims and names[d]:
        return names[d]
    return kind if dims == 1 else f"{kind}_{'xyz'[d]}"


for _k in THREAD_KINDS:
    _HANDLERS[_k] = _launch(_k)


# ------------------------------------------------------------------ buffers
def _alloc(p, scope, args, kwargs, fname):
    if len(args) == 1 and "dtype" in kwargs:  # TIRx: T.alloc_buffer(shape, dtype=...)
        args, kwargs = [args[0], kwargs["dtype"]], {k: v for k, v in kwargs.items()
                                                     if k != "dtype"}
    elif "dtype" in kwargs:
        raise p.error(f"T.{fname} got the dtype both by position and as dtype=")
    _arity(p, fname, args, kwargs, 2, 2, ("layout", "scope", "align"))
    scope = kwargs.get("scope", scope)
    if scope not in SCOPES or scope in ("global", "tmem"):
        raise p.error(f"T.{fname} cannot allocate in scope {scope!r}",
                      "allocate in 'shared', 'shared.dyn' or 'local'; declare tensor memory "
                      "with T.decl_buffer(..., scope='tmem')")
    shape = _shape(p, args[0], f"T.{fname}")
    layout = _layout(p, kwargs.get("layout"), shape, f"T.{fname}", scope)
    t = _dtype(p, args[1])
    align = _align(p, kwargs.get("align"), t, scope)
    swz = getattr(layout, "swizzling", None)
    if swz is not None and not align and scope != "local":
        align = 8 * swz.mode  # the swizzle's repeat: absolute addresses swizzle like offsets
    buf = Buffer(_name(p, "buf"), shape, t, scope, layout, align=align, span=p.span())
    p.emit(DeclBuffer(buf, span=p.span()))
    return buf


MAX_ALIGN = {"shared": 1024, "shared.dyn": 1024, "local": 16}


def _align(p, align, t, scope) -> int:
    """``align=``: the byte alignment of the allocation's start (0: the default, 16)."""
    if align is None:
        return 0
    most = MAX_ALIGN[scope]
    if (not isinstance(align, int) or isinstance(align, bool) or align <= 0
            or align & (align - 1) or align > most or align < t.bytes):
        raise p.error(f"align={align!r} cannot be honoured for a {t} buffer in {scope} memory",
                      f"use a power of two from {t.bytes} to {most} bytes")
    return align


_HANDLERS["alloc_buffer"] = lambda p, a, k: _alloc(p, "shared", a, k, "alloc_buffer")
_HANDLERS["alloc_shared"] = lambda p, a, k: _alloc(p, "shared", a, k, "alloc_shared")
_HANDLERS["alloc_local"] = lambda p, a, k: _alloc(p, "local", a, k, "alloc_local")


@handler("decl_buffer")
def _decl_buffer(p, args, kwargs):
    _arity(p, "decl_buffer", args, kwargs, 2, 2, ("scope", "allocated_addr", "layout"))
    if kwargs.get("scope") != "tmem":
        raise p.error("T.decl_buffer declares tensor memory and needs scope=\"tmem\"",
                      "allocate other memories with T.alloc_buffer")
    addr = kwargs.get("allocated_addr")
    if addr is None:
        raise p.error("T.decl_buffer(scope=\"tmem\") needs allocated_addr=",
                      "pass the address tcgen05.alloc wrote, e.g. allocated_addr=tmem_addr[0]")
    if not is_ir(addr) or not addr.dtype.is_int:
        raise p.error("allocated_addr= must be a run-time 32-bit value such as tmem_addr[0]")
    shape = _shape(p, args[0], "T.decl_buffer")
    layout = _layout(p, kwargs.get("layout"), shape, "T.decl_buffer")
    buf = Buffer(_name(p, "tmem"), shape, _dtype(p, args[1]), "tmem", layout,
                 allocated_addr=addr, span=p.span())
    p.emit(DeclBuffer(buf, span=p.span()))
    return buf


class _BoundMethod:
    def __init__(self, fn, buf):
        self.fn, self.buf = fn, buf

    def __call__(self, p, args, kwargs):
        return self.fn(p, self.buf, args, kwargs)


def _view(p, buf: Buffer, args, kwargs):
    for k in kwargs:
        if k not in ("layout", "dtype"):
            raise p.error(f"view() has no keyword {k!r}", "its keywords are: layout, dtype")
    shape = _shape(p, tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list))
                   else tuple(args), f"{buf.name}.view")
    t = _dtype(p, kwargs["dtype"]) if "dtype" in kwargs else buf.dtype
    layout = _layout(p, kwargs.get("layout"), shape, f"{buf.name}.view", buf.scope)
    if buf.scope == "tmem":
        raise p.error("tensor-memory buffers cannot be viewed", "declare another T.decl_buffer")
    storage = _storage_elems(layout, shape) * t.bits
    have = buf.size * buf.dtype.bits
    if storage > have:
        raise p.error(f"the view needs {storage // 8} bytes per thread but {buf.name!r} has "
                      f"{have // 8}", "view fewer elements or allocate a larger buffer")
    v = Buffer(_name(p, buf.name + "_view"), shape, t, buf.scope, layout, view_of=buf,
               span=p.span())
    p.emit(DeclBuffer(v, span=p.span()))
    return v


def _storage_elems(layout, shape) -> int:
    if layout is None:
        n = 1
        for s in shape:
            n *= s
        return n
    return layout.storage().span("m")


def buffer_attr(p, buf: Buffer, attr: str):
    if attr == "view":
        return _BoundMethod(_view, buf)
    if attr == "shape":
        return tuple(buf.shape)
    if attr == "dtype":
        return buf.dtype.name
    if attr == "scope":
        return buf.scope
    raise p.error(f"buffer {buf.name!r} has no attribute {attr!r}",
                  "buffers have .view(...), .shape, .dtype and .scope")


# ------------------------------------------------------------------ scalars and calls
@handler("address_of")
def _address_of(p, args, kwargs):
    _arity(p, "address_of", args, kwargs, 1)
    v = args[0]
    if isinstance(v, Buffer):
        return AddressOf(v, (), span=p.span())
    if isinstance(v, BufferLoad):
        return AddressOf(v.buffer, v.indices, span=p.span())
    raise p.error(f"T.address_of needs a buffer or a buffer element, got {_describe(v)}")


@handler("cast")
def _cast(p, args, kwargs):
    _arity(p, "cast", args, kwargs, 2)
    t = _dtype(p, args[1])
    v = args[0]
    if not is_ir(v) and not isinstance(v, numbers.Number):
        raise p.error(f"T.cast converts a value, not {_describe(v)}",
                      "index a buffer to get a value: A[i]" if isinstance(v, Buffer) else None)
    return cast(t, v if is_ir(v) else const(v, t))


@handler("select")
def _select(p, args, kwargs):
    _arity(p, "select", args, kwargs, 3)
    return p.select(args[0], args[1], args[2], "T.select")


def _minmax(p, op, args):
    if len(args) != 2:
        raise p.error(f"T.{op} takes 2 arguments, got {len(args)}")
    a, b = args
    if not is_ir(a) and not is_ir(b):
        return min(a, b) if op == "min" else max(a, b)
    ea, eb = tr.operand_types(p, op, a, b)
    return binop(op, ea, eb, p.span())


@handler("ceildiv")
def _ceildiv(p, args, kwargs):
    """``T.ceildiv(a, b)``: ``(a + b - 1) // b`` for b > 0 (compile time or run time)."""
    _arity(p, "ceildiv", args, kwargs, 2)
    a, b = args
    if not is_ir(a) and not is_ir(b):
        if not isinstance(a, int) or not isinstance(b, int) or b <= 0:
            raise p.error(f"T.ceildiv({a!r}, {b!r}) needs integers and a positive divisor")
        return -(-a // b)
    return p.arith("//", p.arith("-", p.arith("+", a, b, p.node), 1, p.node), b, p.node)


_HANDLERS["min"] = lambda p, a, k: (_arity(p, "min", a, k, 2), _minmax(p, "min", a))[1]
_HANDLERS["max"] = lambda p, a, k: (_arity(p, "max", a, k, 2), _minmax(p, "max", a))[1]


def _range(p, args, kwargs, kind):
    name = "range" if kind == "serial" and not kwargs.get("_T") else f"T.{kind}"
    if kwargs:
        raise p.error(f"{name} takes no keywords")
    if not 1 <= len(args) <= 3:
        raise p.error(f"{name} takes 1 to 3 arguments (start, stop, step), got {len(args)}")
    start, stop = (0, args[0]) if len(args) == 1 else args[:2]
    step = args[2] if len(args) == 3 else 1
    for v in (start, stop):
        if not is_ir(v) and (not isinstance(v, int) or isinstance(v, bool)):
            raise p.error(f"{name} bounds must be integers, got {_describe(v)}")
        if not is_ir(v) and not -(1 << 63) <= v < 1 << 63:
            raise p.error(f"the {name} bound {_describe(v)} does not fit int64, the widest "
                          "loop counter", "check the bound")
        if is_ir(v) and not v.dtype.is_int:
            raise p.error(f"{name} bounds must be integers, got a {v.dtype} value")
    if is_ir(step) or not isinstance(step, int) or isinstance(step, bool) or step == 0:
        raise p.error(f"the step of {name} must be a non-zero compile-time int, got "
                      f"{_describe(step)}", "compute the index in the body from a counter "
                      "(for i in range(n): x = start + i * step) for a run-time step")
    if step == 1:
        extent = binop("-", stop, start)
        s = const(start, extent.dtype if is_ir(extent) else None)
        return _LoopRange(s, const(extent, s.dtype), kind)
    # range(start, stop, step): a counter k over the trip count; the name reads start + k step
    span = binop("-", stop, start) if step > 0 else binop("-", start, stop)
    trips = binop("//", binop("+", span, abs(step) - 1), abs(step))
    zero = const(0, trips.dtype if is_ir(trips) else None)
    return _LoopRange(zero, const(trips, zero.dtype), kind, first=start, step=step)


_HANDLERS["serial"] = lambda p, a, k: _range(p, a, k, "serial")
_HANDLERS["unroll"] = lambda p, a, k: _range(p, a, k, "unroll")


@handler("static_range")
def _static_range(p, args, kwargs):
    """``for j in T.static_range(n)``: unrolled while parsing; ``j`` is a Python int, so it
    can feed immediates such as ``T.ptx.cp_async.wait_group(n - 1 - j)``."""
    _arity(p, "static_range", args, kwargs, 1, 3)
    if any(is_ir(a) or not isinstance(a, int) or isinstance(a, bool) for a in args):
        raise p.error("T.static_range bounds must be compile-time ints",
                      "use range(...) for a loop with run-time bounds")
    from .analysis import check_unroll

    r = range(*args)
    check_unroll(p, r, p.node)  # before making the list: it may not fit in memory
    return list(r)


@handler("tvm_storage_sync")
def _storage_sync(p, args, kwargs):
    _arity(p, "tvm_storage_sync", args, kwargs, 1)
    if args[0] != "shared":
        raise p.error(f"T.tvm_storage_sync({args[0]!r}) is not supported",
                      "use T.tvm_storage_sync(\"shared\") (a CTA barrier)")
    return ptx_table.lookup("cuda.cta_sync").call([], {}, p.span())


# ------------------------------------------------------------------ tile primitives
def _tile_call(p, ref: TilePrimitiveRef, args, kwargs):
    prim = ref.prim
    ops = prim.operands
    least = sum(not o.optional for o in ops)
    if len(args) > len(ops) and prim.trailing:  # TIRx: exp(dst, src, bias, scale)
        extra = args[len(ops):]
        if len(extra) > len(prim.trailing):
            raise p.error(f"Tx.{prim.name} takes {len(ops)} operands "
                          f"({', '.join(prim.operand_names)}) and then at most "
                          f"{', '.join(prim.trailing)}, got {len(args)} arguments")
        for k, v in zip(prim.trailing, extra):
            if k in kwargs:
                raise p.error(f"Tx.{prim.name} got {k} both by position and as {k}=")
            kwargs = {**kwargs, k: v}
        args = args[:len(ops)]
    if not least <= len(args) <= len(ops):
        want = str(len(ops)) if least == len(ops) else f"{least} to {len(ops)}"
        raise p.error(f"Tx.{prim.name} takes {want} operands ({', '.join(prim.operand_names)})"
                      f", got {len(args)}")
    operands = [_tile_operand(p, prim, o.name, o.kind, a) for o, a in zip(ops, args)]
    operands += [operands[0]] * (len(ops) - len(args))  # left out: in place, src = dst
    options = tuple((k, _tile_operand(p, prim, k, "value", v)
                     if prim.option(k).kind == "operand" else v)
                    for k, v in prim.check_options(kwargs, p.span()))
    if prim.check is not None:
        from ..tile.compute import Checker

        c = Checker(p.error, lambda v, t, what: tr.coerce(p, v, t, what), prim.name)
        srcs, opts = prim.check(c, operands[0], operands[1:], dict(options))
        operands, options = [operands[0], *srcs], tuple(opts.items())
    p.emit(TileCall(prim.name, ref.scope, tuple(operands), options, span=p.span()))
    return None


def _tile_operand(p, prim, name: str, kind: str, a):
    """One operand of a tile call: a region (a whole buffer is its full region) or, where
    the operand takes one, a scalar (a number or a run-time value)."""
    if isinstance(a, Buffer):
        a = BufferRegion(a, tuple(Range(IntImm(0), s) for s in a.shape), span=p.span())
    if isinstance(a, BufferRegion):
        if kind == "scalar":
            raise p.error(f"operand {name!r} of Tx.{prim.name} must be a scalar (a number or "
                          f"a run-time value), got the region {_describe(a)}",
                          "pass one value, e.g. 0.0 or A[i, j]")
        return a
    if kind == "region":
        raise p.error(f"operand {name!r} of Tx.{prim.name} must be a buffer region, got "
                      f"{_describe(a)}", "pass a slice of a buffer such as A[0:128, 0:32]")
    if not (is_ir(a) or is_scalar(a)):
        raise p.error(f"operand {name!r} of Tx.{prim.name} must be a buffer region or a "
                      f"scalar, got {_describe(a)}")
    return a


# ------------------------------------------------------------------ helpers' state
@handler("local_scalar")
def _local_scalar(p, args, kwargs):
    """``T.local_scalar("int32", init=0)``: a run-time local (TIRx's scalar of a
    meta-class object); a field holding one is assigned in place by helpers."""
    _arity(p, "local_scalar", args, kwargs, 0, 1, ("dtype", "init"))
    t = _dtype(p, args[0] if args else kwargs.get("dtype", "int32"))
    init = tr.coerce(p, kwargs.get("init", 0), t, "T.local_scalar's init=")
    var = Var(p.assign_name or "scalar", t, span=p.span())
    p.mutable[id(var)] = len(p.scopes)
    p.field_vars.add(id(var))
    p.emit(LetStmt(var, init, span=p.span()))
    return var


@handler("meta_var")
def _meta_var(p, args, kwargs):
    """``x = T.meta_var(v)``: ``x`` names ``v`` itself (no local is made; a run-time field
    read through it sees later assignments)."""
    _arity(p, "meta_var", args, kwargs, 1)
    return MetaVar(args[0])


class MetaVar:
    """What ``T.meta_var`` returns: an assignment binds the name to ``value`` itself."""

    def __init__(self, value):
        self.value = value


def handlers() -> dict:
    return dict(_HANDLERS)




