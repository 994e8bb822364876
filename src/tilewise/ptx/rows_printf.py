"""The rows of device printf and assert, system calls (:mod:`tilewise.ptx.table`; the
format's facts in :mod:`tilewise.ptx.printf`).
"""

from __future__ import annotations

from ..ir import dtype as dt
from . import printf
from .op import PtxOp
from .op import param as _p


def _print_check(values) -> str | None:
    try:
        printf.conversions(values["fmt"])
    except printf.FormatError as e:
        return str(e)
    return None


ROWS = [
    PtxOp("print", (_p("fmt", "text"),), "vprintf fmt, args (a system call)", None,
          regs=_p("values", "args", count=lambda v: printf.count(v["fmt"])),
          check=_print_check,
          check_regs=lambda v, regs: printf.values_problem(v["fmt"], [r.dtype for r in regs]),
          doc="C printf from every thread that executes it: %d %i %u %o %x %X %c for "
              "integers and bools, %f %e %g (and capitals) for floats; the output reaches "
              "the host's stdout at the next synchronisation, threads in no defined order "
              "(the simulator prints in thread order)"),
    PtxOp("device_assert", (_p("cond", "value", dtype=dt.bool_), _p("msg", "text", "")),
          "__assertfail msg, file, line, function, 1 (a system call); trap", None,
          doc="stop the kernel when cond is false in any thread: the device prints the "
              "kernel's file:line and msg, the host's next CUDA call fails with "
              "CUDA_ERROR_ASSERT, which tilewise reports naming the assert; the simulator "
              "raises a SimulationError at the assert's line"),
]
