"""Every setting tilewise reads from the environment, read once, typed, in one place.

variable                    knob                                      default
==========================  ========================================  =====================
TILEWISE_CACHE_DIR          ``knobs.cache_dir``: on-disk compile      ``$XDG_CACHE_HOME/
                            cache                                     tilewise``
TILEWISE_CACHE              ``knobs.cache_enabled`` (``0`` disables)  on
TILEWISE_DUMP_DIR           ``knobs.dump_dir``: write every stage     unset (no dumps)
                            there
TILEWISE_SIM_STRICT         ``knobs.sim_strict``: hazards raise       on (``0``: record)
TILEWISE_SIM_STRICT_RACES   ``knobs.sim_strict_races``: two CTAs      off (a warning)
                            writing identical bytes is a hazard
TILEWISE_SIM_CHECKS         ``knobs.sim_checks``: the simulator's     ``full``
                            checks, ``full`` / ``races`` / ``none``
TILEWISE_SIM_MAX_LOOP       ``knobs.sim_max_loop``: iterations one    1048576
                            simulated loop may run before it is
                            reported as endless
CUDA_HOME                   ``knobs.cuda_home``: a toolkit, searched  ``/usr/local/cuda``
                            for libdevice after the nvidia-nvvm wheel
==========================  ========================================  =====================
=======
* ``TILEWISE_CACHE_DIR`` -> ``knobs.cache_dir``: the on-disk compile cache
  (default ``$XDG_CACHE_HOME/tilewise``).
* ``TILEWISE_CACHE`` -> ``knobs.cache_enabled`` (``0`` disables; default on).
* ``TILEWISE_DUMP_DIR`` -> ``knobs.dump_dir``: write every stage there (default unset).
* ``TILEWISE_SIM_STRICT`` -> ``knobs.sim_strict``: hazards raise (default on; ``0``
  records them in the report).
* ``TILEWISE_SIM_STRICT_RACES`` -> ``knobs.sim_strict_races``: two CTAs writing identical
  bytes to one place is a hazard (default off: a warning in the report).
* ``TILEWISE_SIM_CHECKS`` -> ``knobs.sim_checks``: the simulator's checks, ``full``,
  ``races`` or ``none`` (default ``full``; ``simulate(..., checks=)``).
* ``TILEWISE_SIM_MAX_LOOP`` -> ``knobs.sim_max_loop``: iterations one simulated loop may
  run before it is reported as endless (default 1048576).
* ``TILEWISE_TRACEBACK_FILTERING`` -> ``knobs.traceback_filtering``: a TilewiseError
  raised through the API (``tw.compile``, ``tw.simulate``, a launch, ``@T.prim_func``)
  shows the user's frames, not tilewise's (default on; ``off`` keeps every frame, for
  bug reports).
* ``CUDA_HOME`` -> ``knobs.cuda_home``: a toolkit, searched for libdevice after the
  nvidia-nvvm wheel, and for ptxas after PATH (default ``/usr/local/cuda``).
* ``TILEWISE_AUTOTUNE`` -> ``knobs.autotune``: ``tilewise.autotune`` times its candidates
  (default on; ``0``: it uses the first, heuristic, configuration).
* ``TILEWISE_PTXAS`` -> ``knobs.ptxas``: the ptxas that assembles kernels using setmaxnreg
  (``codegen/cubin.py``; ``none``: nvJitLink assembles them too; default unset: PATH,
  ``CUDA_HOME``, Triton's).

No other module reads ``os.environ`` for tilewise settings. Tests change knobs with
:func:`override`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass


def _default_cache_dir(env) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tilewise")


def _flag(value: str | None, default: bool) -> bool:
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def _count(value: str | None, default: int) -> int:
    try:
        n = int(value) if value is not None and value.strip() else default
    except ValueError:
        return default
    return n if n > 0 else default


SIM_CHECKS = ("full", "races", "none")  # the simulator's check levels, the default first


def _choice(value: str | None, options: tuple) -> str:
    v = (value or "").strip().lower()
    return v if v in options else options[0]


@dataclass
class Knobs:
    """The settings; :meth:`from_env` reads them from an environment mapping."""

    cache_dir: str
    cache_enabled: bool = True
    dump_dir: str | None = None
    sim_strict: bool = True
    sim_strict_races: bool = False
    sim_checks: str = "full"
    cuda_home: str = "/usr/local/cuda"
    sim_max_loop: int = 1 << 20
    traceback_filtering: bool = True
    autotune: bool = True
    ptxas: str | None = None

    @classmethod
    def from_env(cls, env=None) -> Knobs:
        env = os.environ if env is None else env
        return cls(cache_dir=env.get("TILEWISE_CACHE_DIR") or _default_cache_dir(env),
                   cache_enabled=_flag(env.get("TILEWISE_CACHE"), True),
                   dump_dir=env.get("TILEWISE_DUMP_DIR") or None,
                   sim_strict=_flag(env.get("TILEWISE_SIM_STRICT"), True),
                   sim_strict_races=_flag(env.get("TILEWISE_SIM_STRICT_RACES"), False),
                   sim_checks=_choice(env.get("TILEWISE_SIM_CHECKS"), SIM_CHECKS),
                   cuda_home=env.get("CUDA_HOME") or "/usr/local/cuda",
                   sim_max_loop=_count(env.get("TILEWISE_SIM_MAX_LOOP"), 1 << 20),
                   traceback_filtering=_flag(env.get("TILEWISE_TRACEBACK_FILTERING"), True),
                   autotune=_flag(env.get("TILEWISE_AUTOTUNE"), True),
                   ptxas=env.get("TILEWISE_PTXAS") or None)


knobs = Knobs.from_env()


@contextlib.contextmanager
def override(**changes):
    """Temporarily change knobs: ``with override(cache_enabled=False): ...``."""
    old = dataclasses.asdict(knobs)
    for k, v in changes.items():
        if not hasattr(knobs, k):
            raise AttributeError(f"no knob named {k!r}")
        setattr(knobs, k, v)
    try:
        yield knobs
    finally:
        for k, v in old.items():
            setattr(knobs, k, v)
