"""Facts of device ``printf`` (``T.print``) and ``assert`` (``T.device_assert``).

The CUDA device runtime offers two system calls that ptxas resolves (PTX ISA §7.2,
"System calls"; CUDA C Programming Guide, "Formatted Output" and "Assertion"):

* ``int vprintf(const char *format, const char *args)``: ``args`` is a buffer holding the
  values after C's default argument promotions, each at an offset aligned to its size
  (ints narrower than 32 bits and bools become 32-bit ints, every float becomes a double,
  64-bit ints stay 64-bit). The output is buffered on the device and written to the host
  process's stdout at the next synchronisation; threads' lines come in no defined order.
* ``void __assertfail(const char *message, const char *file, unsigned line,
  const char *function, size_t char_size)``: prints ``file:line: function: block [...],
  thread [...] Assertion `message` failed.`` and stops the kernel; the context then
  reports ``CUDA_ERROR_ASSERT`` (710) to every later call.

A kernel's format takes the C conversions ``%d %i %u %o %x %X %c`` (integers, bools) and
``%f %F %e %E %g %G`` (floats) with flags, width and precision, and ``%%``. Length
modifiers are tilewise's to choose: the values' dtypes give them (``ll`` for 64-bit
integers), so a user's own (``%ld``) is accepted and replaced. The simulator formats the
same conversions with Python's ``%`` operator, after the same promotions (a ``%u`` of a
negative int32 prints its 32-bit two's complement, as the GPU does).

Pure Python: the standard library only.
"""

from __future__ import annotations

import re

_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d*|\*))?"
                   r"(?P<len>hh|h|ll|l|j|z|t|L|q)?(?P<conv>.?)")
INT_CONVERSIONS = "diuoxXc"
FLOAT_CONVERSIONS = "fFeEgG"
#: System calls a kernel's PTX may declare ``.extern`` (ptxas resolves them).
SYSCALLS = ("vprintf", "__assertfail")


class FormatError(ValueError):
    """A format the device printf cannot take (the message says why)."""


def conversions(fmt: str) -> list[tuple[str, str]]:
    """``(spec without length, conversion letter)`` of each value the format prints, in
    order; FormatError for what vprintf cannot take."""
    out = []
    for m in _SPEC.finditer(fmt):
        conv = m.group("conv")
        if conv == "%" and m.group(0) == "%%":
            continue
        if "*" in (m.group("width") or "") + (m.group("prec") or ""):
            raise FormatError(f"{m.group(0)!r}: a width or precision given as '*' takes an "
                              "argument of its own; write the number into the format")
        if conv not in INT_CONVERSIONS + FLOAT_CONVERSIONS:
            what = {"s": "strings", "p": "pointers", "n": "%n", "a": "hex floats",
                    "A": "hex floats"}.get(conv, f"the conversion {conv!r}" if conv else
                                           "a lone '%' at the end")
            raise FormatError(f"{m.group(0)!r}: T.print cannot print {what}; use %d %i %u %o "
                              "%x %X %c for integers, %f %e %g (or capitals) for floats, %% "
                              "for a percent sign")
        spec = "%" + m.group("flags") + (m.group("width") or "") + (
            "." + m.group("prec") if m.group("prec") is not None else "")
        out.append((spec, conv))
    return out


def count(fmt: str) -> int:
    """How many values ``fmt`` prints (0 for a format vprintf cannot take: the binding
    check reports that one)."""
    try:
        return len(conversions(fmt))
    except FormatError:
        return 0


def values_problem(fmt: str, dtypes: list) -> str | None:
    """Why values of ``dtypes`` (their ``kind`` and ``name``) do not fit the conversions of
    ``fmt`` (C would print garbage), naming the first misfit; None when they fit."""
    for k, ((spec, conv), t) in enumerate(zip(conversions(fmt), dtypes)):
        if conv in INT_CONVERSIONS and t.kind == "float":
            return (f"value {k} is a {t.name} but its conversion {spec}{conv} prints an "
                    f"integer; use %f, %e or %g, or convert it with T.cast")
        if conv in FLOAT_CONVERSIONS and t.kind != "float":
            return (f"value {k} is a {t.name} but its conversion {spec}{conv} prints a float; "
                    f"use %d, %u or %x, or convert it with T.cast")
    return None


def promoted(kind: str, bits: int) -> str:
    """The type a value travels as in vprintf's buffer: ``i32``, ``i64`` or ``f64``."""
    if kind == "float":
        return "f64"
    return "i64" if bits == 64 else "i32"


def device_format(fmt: str, promotions: list[str]) -> str:
    """``fmt`` with each conversion's length modifier set for its promoted value."""
    out, k, pos = [], 0, 0
    for m in _SPEC.finditer(fmt):
        if m.group(0) == "%%":
            continue
        out.append(fmt[pos:m.start()])
        spec = m.group(0)[:m.start("len") - m.start()] if m.group("len") else \
            m.group(0)[:-1]
        out.append(spec + ("ll" if promotions[k] == "i64" else "") + m.group("conv"))
        k += 1
        pos = m.end()
    out.append(fmt[pos:])
    return "".join(out)


def host_format(fmt: str, values: list, kinds: list[tuple[str, int]]) -> str:
    """What the device prints for one thread: ``fmt`` formatted with Python after C's
    promotions (``values`` Python numbers, ``kinds`` their (kind, bits))."""
    convs = conversions(fmt)
    out, k, pos = [], 0, 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m.group(0) == "%%":
            out.append("%")
            continue
        spec, conv = convs[k]
        bits, v = kinds[k][1], values[k]
        k += 1
        if conv in FLOAT_CONVERSIONS:
            out.append((spec + conv) % float(v))
            continue
        width = 64 if bits == 64 else 32
        v = int(v) & ((1 << width) - 1)  # the promoted value's bits
        if conv in "di" or (conv == "c"):
            v = v - (1 << width) if v >> (width - 1) else v
        if conv == "c":
            out.append((spec + "c") % chr(v & 0xFF))
        else:
            out.append((spec + ("d" if conv in "diu" else conv)) % v)
    out.append(fmt[pos:])
    return "".join(out)
