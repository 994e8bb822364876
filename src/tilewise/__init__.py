"""tilewise: a Python tile-level GPU kernel language and compiler.

    import tilewise as tw
    from tilewise import T, Tx

CUDA libraries are imported lazily, only when a launch needs them.
"""

from .errors import (CompileError, ConfigError, DispatchError, HazardError, LaunchError,
                     LayoutError, ScriptError, SimulationError, SimulationWarning, TargetError,
                     TilewiseError, TilewisePerformanceWarning, VerifyError, config_error)
from ._version import __version__
from .autotune import autotune  # the function (binding it here shadows the module's name)
from .ir.stmt import PrimFunc
from .script import T, Tx, from_source

__all__ = ["T", "Tx", "from_source", "TilewiseError", "ScriptError", "LayoutError",
           "DispatchError", "CompileError", "LaunchError", "SimulationError", "HazardError",
           "SimulationWarning", "TargetError", "VerifyError", "TilewisePerformanceWarning",
           "ConfigError", "config_error", "autotune", "Target", "compile", "simulate", "load"]


def _compile_for_device(func):
    """``func`` compiled for the target of this machine's GPU (a LaunchError without one):
    what ``func(*arrays)`` launches (:meth:`tilewise.ir.stmt.PrimFunc.__call__`)."""
    from .compiler import compile
    from .runtime import device_target

    return compile(func, device_target())


PrimFunc.device_compiler = _compile_for_device  # k(A, B, C) launches (PrimFunc.__call__)


def __getattr__(name):
    # Heavy or late-landing parts load on first use, keeping `import tilewise` fast.
    if name == "Target":
        from .target import Target

        return Target
    if name == "compile":
        from .compiler import compile

        return compile
    if name == "load":
        from .runtime.saved import load

        return load
    if name == "simulate":
        from .sim import simulate

        return simulate
    raise AttributeError(f"module 'tilewise' has no attribute {name!r}")
