"""What each ``T.*`` name does when the parser meets a call to it."""

from __future__ import annotations

import inspect
import numbers

from ..errors import TilewiseError
from ..ir import dtype as dt
from ..ir.expr import (AddressOf, BufferLoad, BufferRegion, IntImm, Range, SizeVar, Var,
                       binop, cast, const)
from ..ir.launch import CTA_KINDS
from ..ir.stmt import (THREAD_KINDS, Buffer, LetStmt, ThreadBinding,
                       TileCall)
from ..ptx import table as ptx_table
from . import typerules as tr
from .buffers import (BoundMethod, alloc, decl_buffer, dtype_of, match_buffer,
                      symbolic_extent)
from .inline import BoundInline, InlineFunction, is_meta_class, is_meta_object
from .namespace import Builtin, PtxPath, TilePrimitiveRef, TypeCtor
from .values import LoopRange as _LoopRange
from .values import describe as _describe
from .values import check_arity, is_ir, is_scalar

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
    if isinstance(fn, BoundMethod):
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


def _type_ctor(p, t, args, kwargs):
    if not args and not kwargs:
        return _size_var(p, t)
    check_arity(p, t.name, args, kwargs, 1)
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


# ------------------------------------------------------------------ header and launch
_HANDLERS["match_buffer"] = match_buffer
_HANDLERS["decl_buffer"] = decl_buffer
_HANDLERS["alloc_buffer"] = lambda p, a, k: alloc(p, "shared", a, k, "alloc_buffer")
_HANDLERS["alloc_shared"] = lambda p, a, k: alloc(p, "shared", a, k, "alloc_shared")
_HANDLERS["alloc_local"] = lambda p, a, k: alloc(p, "local", a, k, "alloc_local")


@handler("device_entry")
def _device_entry(p, args, kwargs):
    check_arity(p, "device_entry", args, kwargs, 0)
    if p.entered:
        raise p.error("T.device_entry() is called twice")
    if p.depth:
        raise p.error("T.device_entry() must be at the top level of the kernel")
    p.entered = True
    return None


def _launch(kind):
    def h(p, args, kwargs):
        check_arity(p, kind, args, kwargs, 1)
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
            ext = [symbolic_extent(p, e, f"T.{kind}") if is_ir(e) and symbolic else e
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


# ------------------------------------------------------------------ scalars and calls
@handler("address_of")
def _address_of(p, args, kwargs):
    check_arity(p, "address_of", args, kwargs, 1)
    v = args[0]
    if isinstance(v, Buffer):
        return AddressOf(v, (), span=p.span())
    if isinstance(v, BufferLoad):
        return AddressOf(v.buffer, v.indices, span=p.span())
    raise p.error(f"T.address_of needs a buffer or a buffer element, got {_describe(v)}")


@handler("cast")
def _cast(p, args, kwargs):
    check_arity(p, "cast", args, kwargs, 2)
    t = dtype_of(p, args[1])
    v = args[0]
    if not is_ir(v) and not isinstance(v, numbers.Number):
        raise p.error(f"T.cast converts a value, not {_describe(v)}",
                      "index a buffer to get a value: A[i]" if isinstance(v, Buffer) else None)
    return cast(t, v if is_ir(v) else const(v, t))


@handler("select")
def _select(p, args, kwargs):
    check_arity(p, "select", args, kwargs, 3)
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
    check_arity(p, "ceildiv", args, kwargs, 2)
    a, b = args
    if not is_ir(a) and not is_ir(b):
        if not isinstance(a, int) or not isinstance(b, int) or b <= 0:
            raise p.error(f"T.ceildiv({a!r}, {b!r}) needs integers and a positive divisor")
        return -(-a // b)
    return p.arith("//", p.arith("-", p.arith("+", a, b, p.node), 1, p.node), b, p.node)


_HANDLERS["min"] = lambda p, a, k: (check_arity(p, "min", a, k, 2), _minmax(p, "min", a))[1]
_HANDLERS["max"] = lambda p, a, k: (check_arity(p, "max", a, k, 2), _minmax(p, "max", a))[1]


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
    check_arity(p, "static_range", args, kwargs, 1, 3)
    if any(is_ir(a) or not isinstance(a, int) or isinstance(a, bool) for a in args):
        raise p.error("T.static_range bounds must be compile-time ints",
                      "use range(...) for a loop with run-time bounds")
    from .analysis import check_unroll

    r = range(*args)
    check_unroll(p, r, p.node)  # before making the list: it may not fit in memory
    return list(r)


@handler("tvm_storage_sync")
def _storage_sync(p, args, kwargs):
    check_arity(p, "tvm_storage_sync", args, kwargs, 1)
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
    check_arity(p, "local_scalar", args, kwargs, 0, 1, ("dtype", "init"))
    t = dtype_of(p, args[0] if args else kwargs.get("dtype", "int32"))
    init = tr.coerce(p, kwargs.get("init", 0), t, "T.local_scalar's init=")
    var = Var(p.assign_name or "scalar", t, span=p.span())
    p.mutable[id(var)] = len(p.scopes)
    p.pinned.append(var)
    p.field_vars.add(id(var))
    p.emit(LetStmt(var, init, span=p.span()))
    return var


@handler("meta_var")
def _meta_var(p, args, kwargs):
    """``x = T.meta_var(v)``: ``x`` names ``v`` itself (no local is made; a run-time field
    read through it sees later assignments)."""
    check_arity(p, "meta_var", args, kwargs, 1)
    return MetaVar(args[0])


class MetaVar:
    """What ``T.meta_var`` returns: an assignment binds the name to ``value`` itself."""

    def __init__(self, value):
        self.value = value


def handlers() -> dict:
    return dict(_HANDLERS)




