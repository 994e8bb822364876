"""What the buffer-making ``T.*`` calls do when the parser meets them: ``T.match_buffer``
(a kernel's global arrays), ``T.alloc_buffer`` / ``alloc_shared`` / ``alloc_local``,
``T.decl_buffer`` (tensor memory), a buffer's ``.view(...)`` and attributes, and the checks
of shapes, dtypes and layouts they share (:mod:`.builtins` registers them under their
names)."""

from __future__ import annotations

from ..errors import ScriptError, TilewiseError
from ..ir import dtype as dt
from ..ir.expr import SizeVar, Var
from ..ir.stmt import SCOPES, Buffer, DeclBuffer
from .namespace import TypeCtor
from .values import check_arity, is_ir
from .values import describe as _describe

def _shape(p, shape, what, symbolic: bool = False):
    if isinstance(shape, int) or is_ir(shape):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise p.error(f"the shape of {what} must be a tuple of ints, got {_describe(shape)}")
    out = []
    for s in shape:
        if is_ir(s) and symbolic:
            out.append(symbolic_extent(p, s, what))
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


def symbolic_extent(p, e, what):
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
    unnamed = []
    walk(e, lambda n: unnamed.append(n) if isinstance(n, SizeVar) and not n.name else None)
    if unnamed:  # reached through a container: the launch binds sizes by their names
        raise p.error(f"a symbolic size in the shape of {what} has no name: it came through "
                      "a container (a dict, list or tuple) rather than by its own name",
                      "write the size's name in the kernel (strides=(LD, 1) where LD = "
                      "T.int32() is a module-level name)")
    return e


def dtype_of(p, v):
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


def match_buffer(p, args, kwargs):
    """``T.match_buffer(handle, shape, dtype, layout=, strides=)``: a global array."""
    check_arity(p, "match_buffer", args, kwargs, 2, 3, ("dtype", "layout", "strides"))
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
    buf = Buffer(_name(p, handle.name), shape, dtype_of(p, dtype), "global", layout, data=handle,
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


def alloc(p, scope, args, kwargs, fname):
    """``T.alloc_buffer`` / ``alloc_shared`` / ``alloc_local``: a shared or register buffer."""
    if len(args) == 1 and "dtype" in kwargs:  # TIRx: T.alloc_buffer(shape, dtype=...)
        args, kwargs = [args[0], kwargs["dtype"]], {k: v for k, v in kwargs.items()
                                                     if k != "dtype"}
    elif "dtype" in kwargs:
        raise p.error(f"T.{fname} got the dtype both by position and as dtype=")
    check_arity(p, fname, args, kwargs, 2, 2, ("layout", "scope", "align"))
    scope = kwargs.get("scope", scope)
    if scope not in SCOPES or scope in ("global", "tmem"):
        raise p.error(f"T.{fname} cannot allocate in scope {scope!r}",
                      "allocate in 'shared', 'shared.dyn' or 'local'; declare tensor memory "
                      "with T.decl_buffer(..., scope='tmem')")
    shape = _shape(p, args[0], f"T.{fname}")
    layout = _layout(p, kwargs.get("layout"), shape, f"T.{fname}", scope)
    t = dtype_of(p, args[1])
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


def decl_buffer(p, args, kwargs):
    """``T.decl_buffer(shape, dtype, scope="tmem", allocated_addr=, layout=)``."""
    check_arity(p, "decl_buffer", args, kwargs, 2, 2, ("scope", "allocated_addr", "layout"))
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
    buf = Buffer(_name(p, "tmem"), shape, dtype_of(p, args[1]), "tmem", layout,
                 allocated_addr=addr, span=p.span())
    p.emit(DeclBuffer(buf, span=p.span()))
    return buf


class BoundMethod:
    """A buffer's method (``buf.view``), called by the parser with the parser first."""

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
    t = dtype_of(p, kwargs["dtype"]) if "dtype" in kwargs else buf.dtype
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
        return BoundMethod(_view, buf)
    if attr == "shape":
        return tuple(buf.shape)
    if attr == "dtype":
        return buf.dtype.name
    if attr == "scope":
        return buf.scope
    raise p.error(f"buffer {buf.name!r} has no attribute {attr!r}",
                  "buffers have .view(...), .shape, .dtype and .scope")
