"""One exception hierarchy for everything a user can get wrong.

Every error carries the user's source location when one is known and renders as::

    kernel.py:12:4: error: <what is wrong>
        Tx.cta.copy_async(A_smem[0:128, 0:32], A[0:128, 0:32], dispatch="ldgsts")
        ^
    hint: <what to do>

No frame of tilewise's own files appears in the text (tests assert this), nor in the
traceback of one raised through the API: :func:`api_boundary` trims tilewise's frames
(``TILEWISE_TRACEBACK_FILTERING=off`` keeps them).
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import types
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A place in the user's source: file, 1-based line, 0-based column."""

    file: str
    line: int
    col: int = 0
    source_line: str | None = None  # the text of the line when the file is not on disk
    # inside a @T.inline helper (or Python building a kernel): (what, call site), innermost
    # first
    via: tuple[tuple[str, Span], ...] = ()

    def text(self) -> str | None:
        if self.source_line is not None:
            return self.source_line
        line = linecache.getline(self.file, self.line)
        return line.rstrip("\n") if line else None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class TilewiseError(Exception):
    """Base of every error tilewise raises on purpose."""

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        self.message = message
        self.span = span
        self.hint = hint
        super().__init__(self.render())

    def with_span(self, span: Span | None) -> TilewiseError:
        """Attach a location if the error has none yet (errors raised deep inside get the
        user's line from the statement being processed)."""
        if self.span is None and span is not None:
            self.span = span
            self.args = (self.render(),)
        return self

    def render(self) -> str:
        head = f"{self.kind}: {self.message}"
        if self.span is None:
            out = head
        else:
            out = f"{self.span}: {head}"
            text = self.span.text()
            if text is not None:
                stripped = text.lstrip()
                indent = len(text) - len(stripped)
                caret = " " * max(self.span.col - indent, 0)
                out += f"\n    {stripped}\n    {caret}^"
            for where, site in self.span.via:
                out += f"\n  in {where}, called at {site}"
        if self.hint:
            out += f"\nhint: {self.hint}"
        return out

    def __str__(self) -> str:
        return self.args[0] if self.args else self.render()


class ScriptError(TilewiseError):
    """The kernel's Python source uses something tilewise cannot parse or type."""

    kind = "script error"


class LayoutError(TilewiseError):
    """A malformed layout expression or an impossible layout operation."""

    kind = "layout error"


class DispatchError(TilewiseError):
    """No variant can implement a tile-primitive call, or its options are wrong."""

    kind = "dispatch error"


class VerifyError(TilewiseError):
    """The IR breaks an invariant (names the failing node)."""

    kind = "verify error"


class CompileError(TilewiseError):
    """Code generation or assembly failed, or the target lacks a needed feature."""

    kind = "compile error"


class LaunchError(TilewiseError):
    """Arguments do not fit the kernel, or the launch itself failed."""

    kind = "launch error"


class SimulationError(TilewiseError):
    """The simulator cannot execute the program."""

    kind = "simulation error"


class DeviceAssertError(SimulationError):
    """A ``T.device_assert`` failed in the simulator (at the assert's line)."""

    kind = "device assertion failed"


class HazardError(SimulationError):
    """The simulated program has a data race, a missing wait, a bad access or a deadlock."""

    kind = "hazard"


class SimulationWarning(UserWarning):
    """Something the simulator found benign but worth knowing (``report.warnings``: two CTAs
    writing identical bytes to one place), rendered like an error, as a warning."""

    kind = "warning"

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        self.message, self.span, self.hint = message, span, hint
        super().__init__(self.render())

    render = TilewiseError.render
    __str__ = TilewiseError.__str__


class TargetError(TilewiseError):
    """An unknown or malformed target name, or a feature the target does not have."""

    kind = "target error"


class ConfigError(TilewiseError, ValueError):
    """A kernel factory's argument that no kernel it builds can serve (``make_gemm(...,
    producer="thread")``, a head_dim the tiles cannot take, a tile that does not fit):
    raised by :func:`config_error` at the line that called the factory. It is a ValueError
    too, Python's convention for a bad argument value."""

    kind = "config error"


def config_error(message: str, hint: str | None = None, depth: int = 1) -> ConfigError:
    """The :class:`ConfigError` a kernel factory raises (``raise config_error(...)``),
    located at the first frame outside the factory's own file and tilewise: the user's
    call. ``depth``: how many frames up the factory is (2 from a helper of tilewise's that
    checks a factory's arguments for it). Called from inside tilewise (a compile worker
    building a tuner's candidate) it has no location."""
    frame = sys._getframe(depth)
    own, pkg = frame.f_code.co_filename, os.path.dirname(os.path.abspath(__file__))
    while frame is not None and (frame.f_code.co_filename == own or os.path.abspath(
            frame.f_code.co_filename).startswith(pkg + os.sep)):
        frame = frame.f_back
    span = Span(frame.f_code.co_filename, frame.f_lineno) if frame is not None else None
    return ConfigError(message, span, hint)


class TilewisePerformanceWarning(UserWarning):
    """A kernel compiles and runs correctly but a tile call took a slow path (a scalar loop
    on one thread, say). Raised through :func:`warnings.warn_explicit` at the user's file
    and line by ``tw.compile`` and ``tw.simulate``; silence it with
    ``warnings.simplefilter("ignore", tilewise.TilewisePerformanceWarning)``."""


def performance_warning(message: str, span: Span | None) -> None:
    """Warn at the user's line (``span``), or at the caller when the line is unknown."""
    import warnings

    if span is None:
        warnings.warn(message, TilewisePerformanceWarning, stacklevel=3)
        return
    warnings.warn_explicit(message, TilewisePerformanceWarning, span.file, span.line)


def closest(name: str, options, n: int = 3) -> list[str]:
    """Known names nearest to a misspelt one, for 'did you mean' hints."""
    import difflib

    return difflib.get_close_matches(name, list(options), n=n, cutoff=0.5)


def did_you_mean(name: str, options) -> str:
    near = closest(name, options)
    if near:
        return "did you mean " + " or ".join(repr(x) for x in near) + "?"
    return "known: " + ", ".join(sorted(map(str, options)))


# ------------------------------------------------------------------ trimmed tracebacks
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NOTE = ("(tilewise removed its internal frames from this traceback; "
         "TILEWISE_TRACEBACK_FILTERING=off shows them)")


def api_boundary(fn):
    """Decorate a public entry point (``tw.compile``, ``tw.simulate``, a launch,
    ``@T.prim_func``): a TilewiseError leaving it carries a traceback of the user's frames
    only, as JAX trims its own. The frames of tilewise's files are unlinked from the
    traceback before the exception is re-raised, so the printout (plain ``python``, pytest,
    IPython alike: they all print ``__traceback__``) goes from the user's call straight to
    the message, which names the kernel's line. Chained TilewiseErrors (an error re-worded
    on its way up) are dropped; other chained exceptions keep their user frames. Costs
    nothing until an error passes."""

    @functools.wraps(fn)
    def boundary(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TilewiseError as e:
            if not _filtering():
                raise
            trim_traceback(e)
            if sys.version_info >= (3, 11):
                raise  # re-raises with e.__traceback__ as trimmed: no frame of ours added
            raise e.with_traceback(e.__traceback__) from e.__cause__  # 3.10: one boundary line

    return boundary


def _filtering() -> bool:
    from .knobs import knobs

    return knobs.traceback_filtering


def trim_traceback(e: BaseException) -> BaseException:
    """``e`` with the frames of tilewise's own files removed from its traceback (and from
    the tracebacks of the exceptions chained to it); a chained TilewiseError is dropped."""
    e.__traceback__ = _user_frames(e.__traceback__)
    for attr in ("__cause__", "__context__"):
        inner = getattr(e, attr)
        if isinstance(inner, TilewiseError):
            setattr(e, attr, None)
        elif inner is not None:
            inner.__traceback__ = _user_frames(inner.__traceback__)
    if e.__cause__ is None and isinstance(e.__context__, TilewiseError | type(None)):
        e.__suppress_context__ = True
    if hasattr(e, "add_note") and _NOTE not in getattr(e, "__notes__", ()):
        e.add_note(_NOTE)
    return e


def _user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A new traceback chain of the entries of ``tb`` outside tilewise's package."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def looks_bool(v) -> bool | None:
    """True / False when ``v`` is a string that reads as a boolean ("false", "yes", "0"
    ...), else None: an option given such a string is an error, since Python counts every
    non-empty string as True."""
    if not isinstance(v, str):
        return None
    s = v.strip().lower()
    return True if s in ("true", "yes", "on", "1") else \
        False if s in ("false", "no", "off", "0", "") else None
