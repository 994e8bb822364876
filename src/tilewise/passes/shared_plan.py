"""The one layout of a kernel's shared memory (:class:`SharedPlan`), made once by the
pipeline (``plan-shared``) and read by the launch-limit check
(:mod:`tilewise.passes.check_limits`), the code generator
(:mod:`tilewise.codegen.emitter`) and the simulator (:mod:`tilewise.sim.memory`).

Two regions, as the GPU has them:

* **static** (``scope="shared"``): each buffer one ``.shared`` variable of the module,
  aligned to ``max(16, align)``. ptxas places these variables itself (measured with
  nvJitLink 12.8 for sm_90a: it sorts them by alignment and trims bytes nothing reads), so
  their offsets here are the simulator's placement, in declaration order; what the plan
  guarantees for them on the GPU is the alignment and the total it checks against the
  limits (an upper bound of what ptxas lays out).
* **dynamic** (``scope="shared.dyn"``): offsets, each aligned to ``max(16, align)``, from
  the dynamic window's first :data:`~tilewise.target.DYN_SHARED_ALIGN`-aligned byte. The
  driver aligns the window to 16 bytes only, so the code generator rounds its base up at
  run time and the launch asks for :data:`~tilewise.target.DYN_SHARED_PAD` bytes more.
  These offsets are the GPU's, byte for byte.

The simulator lays the static region from byte 0 and the dynamic window's base at the
first 1024-aligned byte after it (where the run-time rounding puts it when the window
starts 1024-aligned), so every dynamic buffer has the GPU's offset and alignment there too.

A request no placement can honour (an alignment over 1024 bytes, or one that is not a power
of two) is a :class:`~tilewise.errors.CompileError` at the buffer's line, raised here: at
``tw.compile`` or ``tw.simulate``, before any code exists. Views take no room of their own:
they share their root's slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CompileError
from ..ir.stmt import DeclBuffer, PrimFunc
from ..ir.visitor import walk
from ..target import DYN_SHARED_ALIGN, DYN_SHARED_PAD

SHARED_SCOPES = ("shared", "shared.dyn")
MIN_ALIGN = 16  # every allocation starts on 16 bytes (vector accesses, cp.async, bulk copies)


@dataclass(frozen=True)
class SharedSlot:
    """One shared allocation: its offset within its region (``dynamic``: from the window's
    aligned base), its size and alignment in bytes, and its declaration."""

    decl: DeclBuffer
    offset: int
    nbytes: int
    align: int
    dynamic: bool

    @property
    def buffer(self):
        return self.decl.buffer


@dataclass(frozen=True)
class SharedPlan:
    """Every shared allocation of one flat kernel, in declaration order (see the module
    docstring); ``static_bytes``: the static region, padding included; ``dynamic_bytes``:
    the dynamic buffers from the window's aligned base; ``pad``: the bytes the launch adds
    for the run-time rounding of that base (0 without dynamic buffers)."""

    slots: tuple[SharedSlot, ...]
    static_bytes: int
    dynamic_bytes: int
    pad: int
    window_align: int = DYN_SHARED_ALIGN
    _index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", {id(s.buffer): s for s in self.slots})

    @property
    def dynamic_request(self) -> int:
        """The dynamic shared memory a launch provides: the buffers plus the pad."""
        return self.dynamic_bytes + self.pad

    @property
    def total(self) -> int:
        """Static plus dynamic bytes a CTA needs (the launch limit's measure)."""
        return self.static_bytes + self.dynamic_request

    def slot(self, buf) -> SharedSlot | None:
        """The slot of ``buf`` (a view: its root's), None outside shared memory."""
        return self._index.get(id(buf.storage_root()))

    @property
    def dynamic_base(self) -> int:
        """Where the dynamic window's aligned base lies in the simulator's shared memory."""
        return -(-self.static_bytes // self.window_align) * self.window_align

    def address(self, buf) -> int:
        """The byte offset of ``buf`` in the simulator's shared memory of one CTA."""
        s = self.slot(buf)
        return s.offset + (self.dynamic_base if s.dynamic else 0)

    @property
    def simulated_bytes(self) -> int:
        """The size of the simulator's shared memory of one CTA."""
        return self.dynamic_base + self.dynamic_bytes if self.dynamic_bytes else \
            self.static_bytes


def _align_of(decl: DeclBuffer) -> int:
    b = decl.buffer
    align = max(MIN_ALIGN, b.align)
    if align & (align - 1) or align > DYN_SHARED_ALIGN:
        raise CompileError(f"shared buffer {b.name!r} asks for align={b.align}; shared memory "
                           f"honours a power of two up to {DYN_SHARED_ALIGN} bytes", decl.span,
                           hint=f"use align= a power of two from {b.dtype.bytes} to "
                           f"{DYN_SHARED_ALIGN}")
    return align


def plan_shared(func: PrimFunc) -> SharedPlan:
    """Lay out every shared allocation of ``func`` (flat IR), in declaration order."""
    ends = {False: 0, True: 0}
    slots = []

    def look(n):
        if not isinstance(n, DeclBuffer) or n.buffer.view_of is not None:
            return
        b = n.buffer
        if b.scope not in SHARED_SCOPES:
            return
        align, dynamic = _align_of(n), b.scope == "shared.dyn"
        offset = -(-ends[dynamic] // align) * align
        nbytes = b.size * b.dtype.bytes
        ends[dynamic] = offset + nbytes
        slots.append(SharedSlot(n, offset, nbytes, align, dynamic))

    walk(func.body, look)
    dynamic = ends[True]
    return SharedPlan(tuple(slots), ends[False], dynamic, DYN_SHARED_PAD if dynamic else 0)
