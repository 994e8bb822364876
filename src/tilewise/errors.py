"""One exception hierarchy for everything a user can get wrong.

Every error carries the user's source location when one is known and renders as::

    kernel.py:12:4: error: <what is wrong>
        Tx.cta.copy_async(A_smem[0:128, 0:32], A[0:128, 0:32], dispatch="ldgsts")
        ^
    hint: <what to do>

No frame of tilewise's own files appears in the text (tests assert this).
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A place in the user's source: file, 1-based line, 0-based column."""

    file: str
    line: int
    col: int = 0
    source_line: str | None = None  # the text of the line when the file is not on disk

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


class TargetError(TilewiseError):
    """An unknown or malformed target name, or a feature the target does not have."""

    kind = "target error"


def closest(name: str, options, n: int = 3) -> list[str]:
    """Known names nearest to a misspelt one, for 'did you mean' hints."""
    import difflib

    return difflib.get_close_matches(name, list(options), n=n, cutoff=0.5)


def did_you_mean(name: str, options) -> str:
    near = closest(name, options)
    if near:
        return "did you mean " + " or ".join(repr(x) for x in near) + "?"
    return "known: " + ", ".join(sorted(map(str, options)))
