"""Buffers, statements and the PrimFunc.

A kernel is a ``PrimFunc``: parameters (handles bound to global buffers), the launch
declaration (``T.cta_id``/``T.thread_id``/... as :class:`ThreadBinding`), and a body.
Before dispatch the body may hold :class:`TileCall` statements; after lowering it is
*flat*: every buffer is one-dimensional with no layout, every index an element offset
into storage, and every remaining call an entry of the PTX table (see docs/ir.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import api_boundary
from .dtype import DataType
from .expr import Expr, Node, Var

SCOPES = ("global", "shared", "shared.dyn", "local", "tmem")
FOR_KINDS = ("serial", "unroll")
THREAD_KINDS = ("cta_id", "cluster_id", "cta_id_in_cluster", "thread_id", "warp_id", "lane_id",
                "warpgroup_id")


@dataclass(frozen=True, eq=False)
class Buffer(Node):
    """A multi-dimensional array in one memory scope.

    ``data`` is the handle parameter of a ``match_buffer``; ``view_of`` the buffer a
    ``.view`` reinterprets; ``allocated_addr`` the tensor-memory address (an expression,
    usually ``tmem_addr[0]``) of a ``decl_buffer(scope="tmem")``. A global buffer's shape
    and ``strides`` (in elements; None: row-major) may hold symbolic sizes (``SizeVar``
    expressions) bound from the arrays at launch.
    """

    name: str
    shape: tuple[int, ...]
    dtype: DataType
    scope: str = "global"
    layout: object | None = None  # tilewise.layout.TileLayout
    data: Var | None = None
    view_of: Buffer | None = None
    allocated_addr: Expr | None = None
    strides: tuple | None = None
    align: int = 0  # bytes (an allocation's align=; 0: the default, 16)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def symbolic(self) -> bool:
        """Whether a shape or stride is only known at launch."""
        return any(isinstance(s, Expr) for s in self.shape + (self.strides or ()))

    def elem_strides(self) -> tuple:
        """The stride of each dimension in elements (``strides`` or row-major)."""
        if self.strides is not None:
            return tuple(self.strides)
        out, acc = [], 1
        for e in reversed(self.shape):
            out.append(acc)
            acc = acc * e
        return tuple(reversed(out))

    @property
    def kind(self) -> str:
        if self.data is not None:
            return "param"
        if self.view_of is not None:
            return "view"
        if self.scope == "tmem":
            return "decl"
        return "alloc"

    def storage_root(self) -> Buffer:
        b = self
        while b.view_of is not None:
            b = b.view_of
        return b

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.shape}, {self.dtype}, {self.scope})"


@dataclass(frozen=True, eq=False)
class Stmt(Node):
    pass


@dataclass(frozen=True, eq=False)
class SeqStmt(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, eq=False)
class For(Stmt):
    var: Var
    start: Expr
    extent: Expr
    kind: str
    body: Stmt


@dataclass(frozen=True, eq=False)
class IfThenElse(Stmt):
    cond: Expr
    then_body: Stmt
    else_body: Stmt | None = None


@dataclass(frozen=True, eq=False)
class While(Stmt):
    """``while cond: body`` (the condition is evaluated before every iteration)."""

    cond: Expr
    body: Stmt


@dataclass(frozen=True, eq=False)
class Break(Stmt):
    """Leave the innermost ``For``/``While``."""


@dataclass(frozen=True, eq=False)
class Continue(Stmt):
    """Go to the next iteration of the innermost ``For``/``While``."""


@dataclass(frozen=True, eq=False)
class LetStmt(Stmt):
    """Declare a scalar local (visible to the rest of the enclosing block); ``Assign`` gives
    it a new value. Locals are values, not memory: the code generator keeps them in SSA
    form, the simulator in per-thread slots."""

    var: Var
    value: Expr


@dataclass(frozen=True, eq=False)
class Assign(Stmt):
    """Re-assign a scalar local declared by an earlier LetStmt."""

    var: Var
    value: Expr


@dataclass(frozen=True, eq=False)
class BufferStore(Stmt):
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True, eq=False)
class Evaluate(Stmt):
    value: Expr


@dataclass(frozen=True, eq=False)
class DeclBuffer(Stmt):
    """Bring a buffer into scope: an allocation (shared/local), a tensor-memory
    declaration, or a view of another buffer, for the rest of the enclosing block."""

    buffer: Buffer


@dataclass(frozen=True, eq=False)
class TileCall(Stmt):
    """A tile-primitive call ``Tx.<scope>.<op>(args..., **options)`` before dispatch."""

    op: str
    scope: str  # thread | warp | warpgroup | cta | cluster
    args: tuple  # BufferRegion or Expr
    options: tuple[tuple[str, object], ...] = ()

    def option(self, name: str, default=None):
        for k, v in self.options:
            if k == name:
                return v
        return default


@dataclass(frozen=True, eq=False)
class ThreadBinding(Node):
    """One launch dimension bound to a variable: ``tid = T.thread_id([128])``."""

    var: Var
    kind: str
    extents: tuple[int, ...]  # the whole declaration, e.g. cta_id([4, 2]) -> (4, 2)
    dim: int = 0  # which of the extents this var indexes

    @property
    def extent(self) -> int:
        return self.extents[self.dim]


@dataclass(frozen=True, eq=False)
class PrimFunc(Node):
    name: str
    params: tuple[Var, ...]
    buffer_map: tuple[tuple[Var, Buffer], ...]
    launch: tuple[ThreadBinding, ...]
    body: Stmt
    attrs: tuple[tuple[str, object], ...] = field(default=())

    def __getstate__(self):
        """The fields only: the lowerings ``tilewise.pipeline.lower`` keeps on the kernel
        (``_tilewise_lowered``) are not pickled with it (a compiled kernel sent to the
        autotuner's cache or a compile worker was six times larger with them)."""
        state = dict(self.__dict__)
        state.pop("_tilewise_lowered", None)
        return state

    def param_buffers(self) -> list[Buffer]:
        """The global buffers in parameter order (the order of the arrays at launch),
        whatever order the T.match_buffer lines come in."""
        by_param = {id(v): b for v, b in self.buffer_map}
        return [by_param[id(p)] for p in self.params if id(p) in by_param]

    def attr(self, name: str, default=None):
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    @property
    def launch_config(self):
        from .launch import LaunchConfig

        return LaunchConfig.of(self)

    #: ``node -> str``, the printer (:func:`tilewise.ir.printer.script`), which installs
    #: itself here when :mod:`tilewise.ir` is imported (the IR does not import its printer)
    printer = None

    def script(self) -> str:
        """The kernel as text (TVMScript-like; it parses back)."""
        return PrimFunc.printer(self)

    def with_body(self, body: Stmt) -> PrimFunc:
        from dataclasses import replace

        return replace(self, body=body)

    #: ``func -> Kernel`` for this machine's GPU; ``import tilewise`` installs it (the IR
    #: does not import the compiler)
    device_compiler = None

    @api_boundary
    def __call__(self, *arrays, stream=None):
        """Launch on this machine's GPU: ``k(A, B, C)`` compiles the kernel for the device's
        target once (``tilewise.compile``; kept on the function) and launches it."""
        kernel = self.__dict__.get("_device_kernel")
        if kernel is None:
            kernel = PrimFunc.device_compiler(self)
            object.__setattr__(self, "_device_kernel", kernel)
        return kernel(*arrays, stream=stream)


def seq(*stmts: Stmt | None) -> Stmt:
    """A sequence without nesting or Nones; a single statement stays itself."""
    out: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            out.extend(s.stmts)
        else:
            out.append(s)
    if len(out) == 1:
        return out[0]
    return SeqStmt(tuple(out))


def as_prim_func(func):
    """``func``, or the kernel an object stands for (``tilewise.autotune``'s heuristic
    configuration: ``__tilewise_prim_func__()``)."""
    unwrap = getattr(type(func), "__tilewise_prim_func__", None)
    return unwrap(func) if unwrap is not None else func
