"""GPU targets: names, the compatibility partial order, features and PTX versions.

A target is an LLVM NVPTX processor name ``sm_XYz`` (``sm_80``, ``sm_90a``, ``sm_100f``,
``sm_103a``, ``sm_120a`` ...). ``XY`` is the *arch* (``X`` the generation, ``Y`` the version
inside it) and ``z`` an optional feature suffix:

* no suffix: the *base* target. Its code runs on every later arch.
* ``f``: *family-specific*. Adds the features of its family (same generation ``X``); its code
  runs on the same or a later arch of that family only.
* ``a``: *architecture-specific*. Adds every feature of exactly that chip; its code runs on that
  arch only.

The model follows section "NVPTX Architecture Hierarchy and Ordering" of the LLVM NVPTX usage
guide (``/work/shared/reference/llvm-nvptx-usage.rst``):

* ``sm_X1Y1 <= sm_X2Y2`` (base targets) iff ``X1Y1 <= X2Y2``; e.g. ``sm_90 <= sm_103``.
* ``sm_X{Y2}f > sm_X{Y1}f`` iff ``Y2 > Y1`` (same family ``X``); ``sm_XYf > sm_XY``.
* ``sm_XYa > sm_XYf > sm_XY``.
* Encoding (LLVM's ``FullSmVersion``) ``:= arch * 10 + 2 (for 'f') + 1 (for 'a')`` with
  ``arch = X * 10 + Y``: ``sm_103f`` = 1032, ``sm_103a`` = 1033, ``sm_90`` = 900. The family
  is ``encoding // 100`` and the arch ``encoding // 10``; ``encoding & 1`` marks ``a``.

``a <= b`` (:meth:`Target.runs_on`) reads "code compiled for ``a`` runs on ``b``", i.e. ``b``
has every capability of ``a``. It is a partial order: ``sm_100f`` and ``sm_120f`` are
incomparable, so neither ``<=`` nor ``>=`` holds and targets have no total ordering.

Features (:data:`FEATURES`, one table) are defined by the smallest targets that have them: a
target has a feature iff one of those targets runs on it. Each entry also carries the minimum
PTX ISA version the feature needs on that kind of target (PTX ISA notes, see
``/work/shared/reference/ptx-semantics.md`` §7).

PTX versions: :attr:`Target.ptx_version` is the lowest PTX ISA that LLVM 22 accepts for the
target (measured with llvmlite 0.50 / LLVM 22.1: a lower ``+ptxNN`` aborts the process, see
``/work/shared/reference/nvptx-llvm22-compat.md`` §0). LLVM 22 knows ``+ptx60``-``+ptx65``,
``+ptx70``-``+ptx78``, ``+ptx80``-``+ptx88`` and ``+ptx90``; an unknown one is silently ignored,
so versions are never above 9.0 and never below 6.0.

Accepted targets (:data:`KNOWN_TARGETS`) are the processors LLVM 22 knows *and* the
toolchain builds: nvJitLink 13 (CUDA 13) has no code generator for sm_20 to sm_72 and renamed
sm_101 to sm_110 (:data:`UNBUILDABLE`, measured), so those names are a :class:`TargetError`
that says what to use instead, as is a target that is not a string (``target=90``).

Pure Python, no GPU needed, no heavy imports (``import tilewise`` imports this module).
"""

from __future__ import annotations

import re

from tilewise.errors import TargetError, closest, did_you_mean

__all__ = [
    "Target",
    "FEATURES",
    "KNOWN_TARGETS",
    "LLVM_TARGETS",
    "UNBUILDABLE",
    "LLVM_PTX_VERSIONS",
    "MAX_PTX_VERSION",
    "MIN_PTX_VERSION",
    "ptx_feature",
    "STATIC_SHARED_BYTES",
    "DYN_SHARED_ALIGN",
    "DYN_SHARED_PAD",
]

# --------------------------------------------------------------------------------------------
# Tables

#: Every processor LLVM 22.1 (llvmlite 0.50) recognises, with the lowest PTX ISA version it
#: accepts for it (its default ``.version``; anything lower is a fatal LLVM error).
LLVM_TARGETS: dict[str, tuple[int, int]] = {
    "sm_20": (3, 2), "sm_21": (3, 2), "sm_30": (3, 2), "sm_32": (4, 0), "sm_35": (3, 2),
    "sm_37": (4, 1), "sm_50": (4, 0), "sm_52": (4, 1), "sm_53": (4, 2),
    "sm_60": (5, 0), "sm_61": (5, 0), "sm_62": (5, 0),
    "sm_70": (6, 0), "sm_72": (6, 1), "sm_75": (6, 3),
    "sm_80": (7, 0), "sm_86": (7, 1), "sm_87": (7, 4), "sm_88": (9, 0), "sm_89": (7, 8),
    "sm_90": (7, 8), "sm_90a": (8, 0),
    "sm_100": (8, 6), "sm_100a": (8, 6), "sm_100f": (8, 8),
    "sm_101": (8, 6), "sm_101a": (8, 6), "sm_101f": (8, 8),
    "sm_103": (8, 8), "sm_103a": (8, 8), "sm_103f": (8, 8),
    "sm_110": (9, 0), "sm_110a": (9, 0), "sm_110f": (9, 0),
    "sm_120": (8, 7), "sm_120a": (8, 7), "sm_120f": (8, 8),
    "sm_121": (8, 8), "sm_121a": (8, 8), "sm_121f": (8, 8),
}

#: Processors LLVM knows but the toolchain (nvJitLink 13, CUDA 13) cannot build a cubin for
#: (measured: ``nvJitLinkCreate(-arch=...)`` fails with ERROR_UNSUPPORTED_ARCH), with why and
#: what to use instead. They are refused by :class:`Target`, so nothing accepts a target it
#: cannot build.
UNBUILDABLE: dict[str, tuple[str, str]] = {
    **{n: ("CUDA 13 dropped Maxwell, Pascal and Volta (sm_50 to sm_72) and older GPUs",
           "use sm_75 or newer (e.g. 'sm_80', 'sm_90a')")
       for n in LLVM_TARGETS if int(n[3:].rstrip("af")) < 75},
    **{n: ("CUDA 13 renamed sm_101 to sm_110", f"use {n.replace('101', '110')!r}")
       for n in ("sm_101", "sm_101a", "sm_101f")},
}

#: The targets tilewise accepts: every processor of :data:`LLVM_TARGETS` the toolchain
#: builds, with its lowest PTX ISA version.
KNOWN_TARGETS: dict[str, tuple[int, int]] = {
    n: v for n, v in LLVM_TARGETS.items() if n not in UNBUILDABLE}

#: The ``+ptxNN`` features LLVM 22 recognises.
LLVM_PTX_VERSIONS: frozenset[tuple[int, int]] = frozenset(
    [(6, m) for m in range(0, 6)] + [(7, m) for m in range(0, 9)]
    + [(8, m) for m in range(0, 9)] + [(9, 0)]
)
MIN_PTX_VERSION = (6, 0)
MAX_PTX_VERSION = (9, 0)


class Feature:
    """One row of :data:`FEATURES`.

    ``display`` names the feature in messages, ``needs`` says in words which targets have it,
    ``minimal`` lists ``(target, min PTX ISA)`` pairs: the feature is present on every target
    that one of those targets runs on, and needs that PTX version there.
    """

    __slots__ = ("key", "display", "needs", "minimal")

    def __init__(self, key: str, display: str, needs: str,
                 minimal: tuple[tuple[str, tuple[int, int]], ...]):
        self.key = key
        self.display = display
        self.needs = needs
        self.minimal = minimal

    def __repr__(self) -> str:
        return f"Feature({self.key!r})"


def _feature(key, display, needs, *minimal) -> tuple[str, Feature]:
    return key, Feature(key, display, needs, tuple(minimal))


#: The feature table: name -> :class:`Feature`.
FEATURES: dict[str, Feature] = dict([
    _feature("cp_async", "cp.async", "sm_80 or newer", ("sm_80", (7, 0))),
    _feature("cluster", "thread-block clusters", "sm_90 or newer", ("sm_90", (7, 8))),
    _feature("elect_sync", "elect.sync", "sm_90 or newer", ("sm_90", (8, 0))),
    _feature("griddepcontrol", "programmatic dependent launch (griddepcontrol)",
             "sm_90 or newer", ("sm_90", (7, 8))),
    _feature("mbarrier_tx", "mbarrier expect_tx/complete_tx", "sm_90 or newer",
             ("sm_90", (8, 0))),
    # st.async (a store into another CTA's shared memory that completes on its mbarrier):
    # sm_90 from PTX 8.1 (PTX ISA §9.7.9.12)
    _feature("st_async", "st.async", "sm_90 or newer", ("sm_90", (8, 1))),
    _feature("tma", "TMA (cp.async.bulk.tensor)", "sm_90 or newer", ("sm_90", (8, 0))),
    _feature("wgmma", "wgmma", "sm_90a", ("sm_90a", (8, 0))),
    # Warp-level matrix instructions (PTX ISA §9.7.14): ldmatrix from sm_75 (PTX 6.5);
    # mma.sync m16n8k16 f16/bf16, m16n8k8 tf32, m16n8k32 s8/u8 from sm_80 (7.0); the fp8
    # forms m16n8k32 e4m3/e5m2 from sm_89 (8.4: LLVM 22 aborts below it); stmatrix from
    # sm_90 (7.8). LLVM 22 selects each on every later target (nvJitLink assembles it on
    # sm_80, sm_89, sm_90, sm_90a, sm_100a, sm_120a).
    _feature("ldmatrix", "ldmatrix", "sm_75 or newer", ("sm_75", (6, 5))),
    _feature("mma_sync", "mma.sync (m16n8k16/k8/k32)", "sm_80 or newer", ("sm_80", (7, 0))),
    _feature("mma_fp8", "mma.sync with fp8 inputs (e4m3/e5m2)", "sm_89 or newer",
             ("sm_89", (8, 4))),
    _feature("stmatrix", "stmatrix", "sm_90 or newer", ("sm_90", (7, 8))),
    # add/sub/mul/fma .rn.f32x2: sm_100 and newer, PTX 8.6 (LLVM 22 selects them there and
    # splits <2 x float> arithmetic into two scalar instructions below sm_100)
    _feature("f32x2", "packed f32x2 arithmetic", "sm_100 or newer", ("sm_100", (8, 6))),
    # setmaxnreg: sm_90a from PTX 8.0, sm_100a/sm_101a from 8.6, sm_120a from 8.7, the family
    # targets sm_100f (sm_103a/f), sm_110f and sm_120f (sm_121a/f) from 8.8 (CCCL's
    # cuda::ptx target list; LLVM 22 selects it and nvJitLink assembles it on each).
    _feature("setmaxnreg", "setmaxnreg",
             "sm_90a, sm_100a, sm_120a, or a family target of sm_100f/sm_110f/sm_120f "
             "(e.g. sm_103a, sm_110a, sm_121a)",
             ("sm_90a", (8, 0)), ("sm_100a", (8, 6)), ("sm_120a", (8, 7)),
             ("sm_100f", (8, 8)), ("sm_110f", (8, 8)), ("sm_120f", (8, 8))),
    # tcgen05: sm_100a from PTX 8.6; family targets sm_100f (which covers sm_103a/f) and
    # sm_110f (CUDA 13's name for sm_101) from 8.8. Not sm_100 (base) and not sm_120/sm_121
    # with any suffix.
    _feature("tcgen05", "tcgen05",
             "sm_100a, or a family target of sm_100f/sm_110f (e.g. sm_103a, sm_110a)",
             ("sm_100a", (8, 6)), ("sm_100f", (8, 8)), ("sm_110f", (8, 8))),
])

#: Shared memory one CTA may use, static and dynamic together, with the opt-in, in KB, by
#: architecture (CUDA C++ Programming Guide, "Technical Specifications per Compute
#: Capability"); a CTA declares at most 48 KB statically on every architecture.
_MAX_SHARED_KB = {70: 96, 72: 96, 75: 64, 80: 163, 86: 99, 87: 163, 88: 99, 89: 99, 90: 227,
                  100: 227, 101: 227, 103: 227, 110: 227, 120: 99, 121: 99}
STATIC_SHARED_BYTES = 48 * 1024
#: dynamic shared memory is placed from a base rounded up at run time to this alignment (the
#: 128-byte swizzle's repeat; TMA and wgmma need it), because the driver aligns the dynamic
#: window to 16 bytes only; a kernel with dynamic buffers asks for DYN_SHARED_PAD more bytes
DYN_SHARED_ALIGN = 1024
DYN_SHARED_PAD = DYN_SHARED_ALIGN - 16

# Targets shown as examples in hints, when every matching target would be too many.
_HINT_EXAMPLES = ("sm_80", "sm_89", "sm_90a", "sm_100a", "sm_100f", "sm_103a", "sm_110a",
                  "sm_120a")

_NAME_RE = re.compile(r"sm_([1-9][0-9]+)([af]?)")
_FORM = "sm_XY, sm_XYa or sm_XYf (e.g. 'sm_80', 'sm_90a', 'sm_100f')"


def _ptx_str(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


# --------------------------------------------------------------------------------------------
# Target


class Target:
    """An NVPTX target such as ``Target("sm_90a")``. Immutable and hashable.

    ``Target(t)`` with ``t`` a Target returns ``t``. ``a <= b`` means ``a.runs_on(b)``.
    """

    __slots__ = ("_name", "_arch", "_suffix")

    def __new__(cls, name: str | Target) -> Target:
        if isinstance(name, Target):
            return name
        if not isinstance(name, str):
            raise TargetError(f"a target is a name such as 'sm_90a', not "
                              f"{type(name).__name__} {name!r}", hint=_value_hint(name))
        m = _NAME_RE.fullmatch(name)
        if m is None:
            raise TargetError(f"malformed target name {name!r}: expected {_FORM}",
                              hint=_name_hint(name))
        if name in UNBUILDABLE:
            why, instead = UNBUILDABLE[name]
            raise TargetError(f"target {name!r} cannot be built: nvJitLink (CUDA 13) has no "
                              f"code generator for it ({why})", hint=instead)
        if name not in KNOWN_TARGETS:
            raise TargetError(f"unknown target {name!r}: not a processor LLVM 22 knows",
                              hint=_name_hint(name))
        self = object.__new__(cls)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_arch", int(m.group(1)))
        object.__setattr__(self, "_suffix", m.group(2))
        return self

    # -- immutability, identity -------------------------------------------------------------

    def __setattr__(self, key, value):
        raise AttributeError("Target is immutable")

    def __delattr__(self, key):
        raise AttributeError("Target is immutable")

    def __reduce__(self):
        return (Target, (self._name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"Target({self._name!r})"

    def __hash__(self) -> int:
        return hash(("Target", self._name))

    def __eq__(self, other) -> bool:
        if isinstance(other, Target):
            return self._name == other._name
        return NotImplemented

    def __ne__(self, other) -> bool:
        if isinstance(other, Target):
            return self._name != other._name
        return NotImplemented

    # -- parts of the name ------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The target name, e.g. ``"sm_90a"``."""
        return self._name

    @property
    def llvm_cpu(self) -> str:
        """The LLVM CPU name for ``create_target_machine(cpu=...)`` (same as :attr:`name`)."""
        return self._name

    @property
    def arch(self) -> int:
        """``X * 10 + Y``: 90 for sm_90a, 103 for sm_103f."""
        return self._arch

    @property
    def suffix(self) -> str:
        """``""``, ``"a"`` (architecture-specific) or ``"f"`` (family-specific)."""
        return self._suffix

    @property
    def family(self) -> int:
        """The generation ``X`` (``encoding // 100``): 9 for sm_90a, 10 for sm_103f."""
        return self._arch // 10

    @property
    def is_arch_specific(self) -> bool:
        return self._suffix == "a"

    @property
    def is_family_specific(self) -> bool:
        return self._suffix == "f"

    @property
    def encoding(self) -> int:
        """``arch * 10 + 2 (for 'f' and 'a') + 1 (for 'a')``: sm_103f = 1032, sm_103a = 1033."""
        return self._arch * 10 + 2 * (self._suffix in ("f", "a")) + (self._suffix == "a")

    @property
    def base(self) -> Target:
        """The target without its suffix: sm_90 for sm_90a."""
        return Target(f"sm_{self._arch}")

    # -- the partial order ------------------------------------------------------------------

    def runs_on(self, other: str | Target) -> bool:
        """True iff code compiled for this target runs on ``other`` (``self <= other``).

        * base ``sm_XY``: on every target of the same or a later arch, any suffix;
        * ``sm_XYf``: on ``f``/``a`` targets of the same family ``X`` with arch >= ``XY``;
        * ``sm_XYa``: on ``sm_XYa`` only.
        """
        other = Target(other)
        if self._suffix == "":
            return self._arch <= other._arch
        if self._suffix == "f":
            return (other._suffix in ("f", "a") and other.family == self.family
                    and self._arch <= other._arch)
        return self == other

    compatible_with = runs_on

    def __le__(self, other):
        if isinstance(other, (Target, str)):
            return self.runs_on(other)
        return NotImplemented

    def __ge__(self, other):
        if isinstance(other, (Target, str)):
            return Target(other).runs_on(self)
        return NotImplemented

    def __lt__(self, other):
        if isinstance(other, (Target, str)):
            other = Target(other)
            return self != other and self.runs_on(other)
        return NotImplemented

    def __gt__(self, other):
        if isinstance(other, (Target, str)):
            other = Target(other)
            return self != other and other.runs_on(self)
        return NotImplemented

    # -- features ---------------------------------------------------------------------------

    @property
    def max_shared_bytes(self) -> int:
        """Shared memory a CTA may use (static + dynamic, with the opt-in)."""
        return _MAX_SHARED_KB.get(self._arch, 48) * 1024

    def has(self, feature: str) -> bool:
        """Whether the target has ``feature`` (a key of :data:`FEATURES`)."""
        return bool(self._matches(_lookup(feature)))

    def require(self, feature: str, what: str | None = None, span=None) -> None:
        """Raise :class:`TargetError` unless the target has ``feature``.

        ``what`` names the operation in the message (default: the feature's display name),
        e.g. ``"cp.async needs sm_80 or newer; target is sm_75"``.
        """
        spec = _lookup(feature)
        if self._matches(spec):
            return
        raise TargetError(f"{what or spec.display} needs {spec.needs}; target is {self}",
                          span=span, hint=_feature_hint(spec))

    def cluster_problem(self, what: str) -> str | None:
        """The one wording of a cluster asked of a target without thread-block clusters
        (``what`` says who asks: the declaration, the ``cluster_dim`` option), None when the
        target has them."""
        if self.has("cluster"):
            return None
        spec = _lookup("cluster")
        return f"{what}; {spec.display} need {spec.needs}, target is {self}"

    def feature_min_ptx(self, feature: str) -> tuple[int, int]:
        """The lowest PTX ISA version in which ``feature`` exists on this target.

        Raises :class:`TargetError` (as :meth:`require`) if the target lacks it.
        """
        self.require(feature)
        return min(ptx for _, ptx in self._matches(_lookup(feature)))

    def _matches(self, spec: Feature) -> list[tuple[str, tuple[int, int]]]:
        return [(t, ptx) for t, ptx in spec.minimal if Target(t).runs_on(self)]

    # -- PTX ISA version --------------------------------------------------------------------

    @property
    def ptx_version(self) -> tuple[int, int]:
        """The PTX ISA version to emit: the lowest LLVM 22 accepts for this target."""
        v = max(KNOWN_TARGETS[self._name], MIN_PTX_VERSION)
        return min(v, MAX_PTX_VERSION)

    @property
    def ptx_feature(self) -> str:
        """:attr:`ptx_version` as an LLVM feature string, e.g. ``"+ptx88"``."""
        return ptx_feature(self.ptx_version)

    def ptx_version_for(self, features=()) -> tuple[int, int]:
        """The PTX version for a kernel using ``features``: the maximum of the target's minimum
        and each feature's minimum on this target. Raises TargetError if a feature is missing
        or needs a PTX version above 9.0 (the highest LLVM 22 knows)."""
        v = self.ptx_version
        for f in features:
            need = self.feature_min_ptx(f)
            if need > MAX_PTX_VERSION:
                raise TargetError(
                    f"{FEATURES[f].display} needs PTX ISA {_ptx_str(need)} on {self}, "
                    f"but LLVM 22 emits at most PTX ISA {_ptx_str(MAX_PTX_VERSION)}",
                    hint="use a newer LLVM (llvmlite) or avoid this feature")
            v = max(v, need)
        return v

    # -- construction from a device ---------------------------------------------------------

    @classmethod
    def from_device(cls, major: int, minor: int) -> Target:
        """The arch-specific target for a GPU of compute capability ``major.minor``:
        9.0 -> sm_90a, 10.0 -> sm_100a, 12.0 -> sm_120a, 8.6 -> sm_86 (no ``a`` variant)."""
        arch = f"sm_{int(major)}{int(minor)}"
        for name in (arch + "a", arch):
            if name in KNOWN_TARGETS:
                return cls(name)
        raise TargetError(f"no target for a device of compute capability {major}.{minor}",
                          hint=f"known targets: {', '.join(KNOWN_TARGETS)}")

    @staticmethod
    def known() -> list[Target]:
        """Every target LLVM 22 knows, in table order."""
        return [Target(n) for n in KNOWN_TARGETS]


def ptx_feature(version: tuple[int, int]) -> str:
    """``(8, 8)`` -> ``"+ptx88"``."""
    return f"+ptx{version[0]}{version[1]}"


def _lookup(feature: str) -> Feature:
    try:
        return FEATURES[feature]
    except (KeyError, TypeError):
        raise ValueError(f"unknown target feature {feature!r}; known: "
                         f"{', '.join(sorted(FEATURES))}") from None


def _feature_hint(spec: Feature) -> str:
    having = [n for n in KNOWN_TARGETS if Target(n)._matches(spec)]
    if len(having) <= 10:
        return f"targets with {spec.display}: {', '.join(having)}"
    examples = [n for n in _HINT_EXAMPLES if n in having]
    return f"use a target with {spec.display}, e.g. {', '.join(examples)}"


def _value_hint(value) -> str:
    """A hint for a target given as a number or another non-string value."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        digits = str(value).replace(".", "")
        near = [n for n in KNOWN_TARGETS if n.rstrip("af") == f"sm_{digits}"]
        if near:
            return "did you mean " + " or ".join(repr(x) for x in near) + "?"
    return "pass the target as a string, e.g. target='sm_90a'"


def _name_hint(name: str) -> str:
    s = name.strip().lower().replace("-", "_")
    for prefix in ("compute_", "sm"):
        if s.startswith(prefix):
            s = "sm_" + s[len(prefix):].lstrip("_")
    if s in KNOWN_TARGETS and s != name:
        return f"did you mean {s!r}?"
    m = re.fullmatch(r"sm_([0-9]+)([a-z]*)", s)
    if m:
        # same arch with another suffix, or the neighbouring archs
        same = [n for n in KNOWN_TARGETS if n.rstrip("af") == f"sm_{m.group(1)}"]
        if same:
            return "did you mean " + " or ".join(repr(x) for x in same) + "?"
    if closest(name, KNOWN_TARGETS):
        return did_you_mean(name, KNOWN_TARGETS)
    return f"known targets: {', '.join(KNOWN_TARGETS)}"
