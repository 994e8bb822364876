"""tilewise.target: names, the guide's architecture ordering, features, PTX versions.

The ordering tests quote section "NVPTX Architecture Hierarchy and Ordering" of
/work/shared/reference/llvm-nvptx-usage.rst.
"""

import copy
import itertools
import pickle

import pytest

from tilewise.errors import TargetError
from tilewise.target import (
    FEATURES,
    KNOWN_TARGETS,
    LLVM_PTX_VERSIONS,
    MAX_PTX_VERSION,
    Target,
    ptx_feature,
)

ALL = [Target(n) for n in KNOWN_TARGETS]


# --------------------------------------------------------------------------------------------
# Parsing, identity


@pytest.mark.parametrize("name, arch, suffix, family", [
    ("sm_80", 80, "", 8), ("sm_86", 86, "", 8), ("sm_90", 90, "", 9), ("sm_90a", 90, "a", 9),
    ("sm_100", 100, "", 10), ("sm_100a", 100, "a", 10), ("sm_100f", 100, "f", 10),
    ("sm_103a", 103, "a", 10), ("sm_103f", 103, "f", 10), ("sm_110a", 110, "a", 11),
    ("sm_120a", 120, "a", 12), ("sm_121f", 121, "f", 12),
])
def test_parse(name, arch, suffix, family):
    t = Target(name)
    assert (t.name, t.llvm_cpu, t.arch, t.suffix, t.family) == (name, name, arch, suffix, family)
    assert str(t) == name
    assert repr(t) == f"Target('{name}')"
    assert t.is_arch_specific == (suffix == "a")
    assert t.is_family_specific == (suffix == "f")
    assert t.base == Target(f"sm_{arch}")


def test_every_known_target_parses():
    assert [str(t) for t in ALL] == list(KNOWN_TARGETS)


def test_target_of_target_is_itself():
    t = Target("sm_90a")
    assert Target(t) is t


def test_immutable_hashable():
    t = Target("sm_90a")
    with pytest.raises(AttributeError):
        t._arch = 100
    with pytest.raises(AttributeError):
        t.foo = 1
    with pytest.raises(AttributeError):
        del t._name
    assert t == Target("sm_90a") and hash(t) == hash(Target("sm_90a"))
    assert t != Target("sm_90")
    assert len({Target("sm_90a"), Target("sm_90a"), Target("sm_90")}) == 2
    assert {t: 1}[Target("sm_90a")] == 1
    assert pickle.loads(pickle.dumps(t)) == t
    assert copy.deepcopy(t) is t
    assert (t == "sm_90a") is False  # no implicit string equality


@pytest.mark.parametrize("bad, message, hint", [
    ("sm90a", "malformed target name 'sm90a': expected sm_XY, sm_XYa or sm_XYf "
              "(e.g. 'sm_80', 'sm_90a', 'sm_100f')", "did you mean 'sm_90a'?"),
    ("SM_90A", "malformed target name 'SM_90A'", "did you mean 'sm_90a'?"),
    ("compute_90a", "malformed target name 'compute_90a'", "did you mean 'sm_90a'?"),
    ("sm_90b", "malformed target name 'sm_90b'", "did you mean 'sm_90' or 'sm_90a'?"),
    ("sm_100af", "malformed target name 'sm_100af'", "'sm_100a'"),
    ("sm_090", "malformed target name 'sm_090'", "'sm_90'"),
    (" sm_80", "malformed target name ' sm_80'", "did you mean 'sm_80'?"),
    ("", "malformed target name ''", "known targets: sm_75, "),
    ("hopper", "malformed target name 'hopper'", "known targets: sm_75, "),
    ("sm_91", "unknown target 'sm_91': not a processor LLVM 22 knows", "'sm_90'"),
    ("sm_90f", "unknown target 'sm_90f': not a processor LLVM 22 knows",
     "did you mean 'sm_90' or 'sm_90a'?"),
    ("sm_89a", "unknown target 'sm_89a'", "did you mean 'sm_89'?"),
    ("sm_1000", "unknown target 'sm_1000'", "'sm_100'"),
])
def test_bad_names(bad, message, hint):
    with pytest.raises(TargetError) as ei:
        Target(bad)
    err = ei.value
    assert err.message.startswith(message)
    assert hint in err.hint
    assert str(err).startswith("target error: ")


@pytest.mark.parametrize("value, message, hint", [
    (90, "a target is a name such as 'sm_90a', not int 90", "did you mean 'sm_90' or 'sm_90a'?"),
    (100, "not int 100", "'sm_100' or 'sm_100a' or 'sm_100f'"),
    (None, "not NoneType None", "pass the target as a string, e.g. target='sm_90a'"),
    (9.0, "not float 9.0", "did you mean 'sm_90'"),
    ([90], "not list [90]", "pass the target as a string"),
])
def test_non_string_is_a_target_error(value, message, hint):
    with pytest.raises(TargetError) as ei:
        Target(value)
    assert message in ei.value.message and hint in ei.value.hint


@pytest.mark.parametrize("name, why, hint", [
    ("sm_20", "CUDA 13 dropped Maxwell, Pascal and Volta", "use sm_75 or newer"),
    ("sm_52", "(sm_50 to sm_72)", "use sm_75 or newer"),
    ("sm_70", "nvJitLink (CUDA 13) has no code generator for it", "'sm_80', 'sm_90a'"),
    ("sm_72", "cannot be built", "use sm_75 or newer"),
    ("sm_101", "CUDA 13 renamed sm_101 to sm_110", "use 'sm_110'"),
    ("sm_101a", "renamed sm_101 to sm_110", "use 'sm_110a'"),
    ("sm_101f", "renamed sm_101 to sm_110", "use 'sm_110f'"),
])
def test_targets_the_toolchain_cannot_build_are_refused(name, why, hint):
    with pytest.raises(TargetError) as ei:
        Target(name)
    assert ei.value.message.startswith(f"target {name!r} cannot be built")
    assert why in ei.value.message and hint in ei.value.hint


def test_accepted_targets_are_what_llvm_knows_less_what_nvjitlink_cannot_build():
    from tilewise.target import LLVM_TARGETS, UNBUILDABLE

    assert set(KNOWN_TARGETS) == set(LLVM_TARGETS) - set(UNBUILDABLE)
    assert min(t.arch for t in ALL) == 75 and "sm_101a" not in KNOWN_TARGETS


# --------------------------------------------------------------------------------------------
# The guide's section "NVPTX Architecture Hierarchy and Ordering"


@pytest.mark.parametrize("name, code", [
    # "For example, ``sm_103f`` is encoded as 1032 (103 * 10 + 2) and ``sm_103a`` is
    #  encoded as 1033 (103 * 10 + 2 + 1)."
    ("sm_103f", 1032), ("sm_103a", 1033),
    # "Encoding := Arch * 10 + 2 (for 'f') + 1 (for 'a')"; "Arch := X * 10 + Y"
    ("sm_103", 1030), ("sm_90", 900), ("sm_90a", 903), ("sm_80", 800),
    ("sm_100f", 1002), ("sm_100a", 1003), ("sm_120f", 1202), ("sm_121a", 1213),
])
def test_encoding(name, code):
    assert Target(name).encoding == code


@pytest.mark.parametrize("t", ALL, ids=str)
def test_encoding_decodes(t):
    # "Compare Family and Arch by dividing FullSMVersion by 100 and 10 respectively"
    # "Detect ``a`` variants by checking FullSMVersion & 1."
    assert t.encoding // 100 == t.family
    assert t.encoding // 10 == t.arch
    assert bool(t.encoding & 1) == t.is_arch_specific


# (lower, higher, lower <= higher): every example of the section, quoted
GUIDE_EXAMPLES = [
    # "Since 90 <= 103, ``sm_90`` is compatible with ``sm_103``."
    ("sm_90", "sm_103", True),
    # "Since ``Y1 < Y2``, ``sm_100f`` is compatible with ``sm_103f``."
    ("sm_100f", "sm_103f", True),
    # "Similarly based on the second rule, ``sm_90`` is compatible with ``sm_103f``."
    ("sm_90", "sm_103f", True),
    # "Since both belongs to different family i.e. ``X1 != X2``, ``sm_100f`` is not
    #  compatible with ``sm_120f``."
    ("sm_100f", "sm_120f", False),
    ("sm_120f", "sm_100f", False),
    # "The ``sm_103`` is compatible with ``sm_103a`` and ``sm_103f``, and ``sm_103f`` is
    #  compatible with ``sm_103a``."
    ("sm_103", "sm_103a", True),
    ("sm_103", "sm_103f", True),
    ("sm_103f", "sm_103a", True),
]


@pytest.mark.parametrize("a, b, expected", GUIDE_EXAMPLES)
def test_guide_examples(a, b, expected):
    a, b = Target(a), Target(b)
    assert a.runs_on(b) is expected
    assert a.compatible_with(b) is expected
    assert (a <= b) is expected
    assert (b >= a) is expected
    assert (a < b) is expected  # all examples are between distinct targets
    assert (b > a) is expected


@pytest.mark.parametrize("a, b, expected", [
    # "If ``X1Y1 <= X2Y2``, then GPU capabilities of ``sm_X1Y1`` are included in ``sm_X2Y2``."
    ("sm_80", "sm_90", True), ("sm_90", "sm_80", False), ("sm_80", "sm_120a", True),
    ("sm_90", "sm_90a", True), ("sm_100", "sm_100f", True),
    # "``sm_X{Y2}f > sm_X{Y1}f`` iff ``Y2 > Y1``"
    ("sm_103f", "sm_100f", False), ("sm_120f", "sm_121f", True), ("sm_121f", "sm_120f", False),
    ("sm_100f", "sm_103a", True), ("sm_100f", "sm_100a", True),
    # "``sm_XY{f} > sm_{XY}{}``" (strict: f code does not run on the base target)
    ("sm_103f", "sm_103", False), ("sm_100f", "sm_103", False), ("sm_100f", "sm_110f", False),
    # "``sm_XY{a} > sm_XY{f} > sm_{XY}{}``" (strict)
    ("sm_103a", "sm_103f", False), ("sm_103a", "sm_103", False),
    # arch-specific code runs on exactly that arch
    ("sm_90a", "sm_100a", False), ("sm_90a", "sm_100", False), ("sm_100a", "sm_103a", False),
    ("sm_100a", "sm_100f", False), ("sm_120a", "sm_121a", False),
])
def test_order_rules(a, b, expected):
    assert Target(a).runs_on(Target(b)) is expected
    assert (Target(a) <= Target(b)) is expected


def test_strings_coerce_in_comparisons():
    assert Target("sm_90") <= "sm_103"
    assert "sm_90" <= Target("sm_103")  # reflected __ge__
    assert Target("sm_90").runs_on("sm_100a")
    with pytest.raises(TargetError):
        Target("sm_90") <= "sm_91"
    with pytest.raises(TypeError):
        Target("sm_90") <= 90


def test_incomparable_pairs_exist():
    a, b = Target("sm_100f"), Target("sm_120f")
    assert not (a <= b) and not (b <= a) and not (a < b) and not (a > b) and not (a >= b)
    assert a != b


def test_partial_order_laws():
    for a in ALL:
        assert a <= a and a >= a and not a < a and not a > a  # reflexive, irreflexive strict
    for a, b in itertools.product(ALL, repeat=2):
        assert (a <= b) == (b >= a)
        assert (a < b) == (a <= b and a != b)
        assert (a > b) == (b < a)
        if a <= b and b <= a:
            assert a == b  # antisymmetric
    for a, b, c in itertools.product(ALL, repeat=3):
        if a <= b and b <= c:
            assert a <= c, (a, b, c)  # transitive


def test_order_agrees_with_encoding_within_a_family():
    # "Compare within the family by comparing FullSMVersion, given both belongs to the same
    #  family." -- for the family-specific and arch-specific variants of one family, <=
    #  implies a smaller-or-equal encoding
    for a, b in itertools.product(ALL, repeat=2):
        if a <= b:
            assert a.encoding <= b.encoding


# --------------------------------------------------------------------------------------------
# Features

FEATURE_NAMES = ["cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "tcgen05", "wgmma",
                 "setmaxnreg", "ldmatrix", "mma_sync", "mma_fp8", "stmatrix", "f32x2",
                 "griddepcontrol", "st_async"]
# the warp-level matrix instructions, by the first arch that has them (PTX ISA §9.7.14)
_WARP_MMA = {"sm_75": {"ldmatrix"}, "sm_80": {"ldmatrix", "mma_sync"},
             "sm_89": {"ldmatrix", "mma_sync", "mma_fp8"},
             "sm_90": {"ldmatrix", "mma_sync", "mma_fp8", "stmatrix"}}
_SM100 = _WARP_MMA["sm_90"] | {"f32x2"}  # and packed f32x2 arithmetic from sm_100
# target -> features it has
FEATURE_TABLE = {
    "sm_75": _WARP_MMA["sm_75"],
    "sm_80": {"cp_async"} | _WARP_MMA["sm_80"],
    "sm_86": {"cp_async"} | _WARP_MMA["sm_80"],
    "sm_89": {"cp_async"} | _WARP_MMA["sm_89"],
    "sm_90": {"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster"} | _WARP_MMA["sm_90"],
    "sm_90a": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "wgmma", "setmaxnreg"}
               | _WARP_MMA["sm_90"]),
    "sm_100": {"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster"} | _SM100,
    "sm_100a": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "tcgen05", "setmaxnreg"}
                | _SM100),
    "sm_100f": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "tcgen05", "setmaxnreg"}
                | _SM100),
    "sm_103": {"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster"} | _SM100,
    "sm_103a": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "tcgen05", "setmaxnreg"}
                | _SM100),
    "sm_103f": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "tcgen05", "setmaxnreg"}
                | _SM100),
    "sm_110": {"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster"} | _SM100,
    "sm_110a": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "tcgen05", "setmaxnreg"}
                | _SM100),
    "sm_110f": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "tcgen05", "setmaxnreg"}
                | _SM100),
    "sm_120": {"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster"} | _SM100,
    "sm_120a": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "setmaxnreg"}
                | _SM100),
    "sm_120f": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "setmaxnreg"}
                | _SM100),
    "sm_121a": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "setmaxnreg"}
                | _SM100),
    "sm_121f": ({"cp_async", "tma", "mbarrier_tx", "elect_sync", "cluster", "setmaxnreg"}
                | _SM100),
}
# griddepcontrol (programmatic dependent launch): sm_90 and newer from PTX 7.8, where
# clusters begin (PTX ISA §9.7.13.14)
# clusters begin (PTX ISA §9.7.13.14); st.async from sm_90 too (PTX 8.1, §9.7.9.12)
FEATURE_TABLE = {t: f | ({"griddepcontrol", "st_async"} if "cluster" in f else set())
                 for t, f in FEATURE_TABLE.items()}


def test_feature_names():
    assert sorted(FEATURES) == sorted(FEATURE_NAMES)


@pytest.mark.parametrize("name, expected", sorted(FEATURE_TABLE.items()))
def test_has(name, expected):
    t = Target(name)
    assert {f for f in FEATURE_NAMES if t.has(f)} == expected


@pytest.mark.parametrize("feature", FEATURE_NAMES)
def test_features_are_upward_closed(feature):
    # a feature available on a target is available on every target its code runs on
    for a, b in itertools.product(ALL, repeat=2):
        if a <= b and a.has(feature):
            assert b.has(feature), (feature, a, b)


def test_unknown_feature_is_value_error():
    with pytest.raises(ValueError) as ei:
        Target("sm_90a").has("tmaa")
    assert str(ei.value) == ("unknown target feature 'tmaa'; known: cluster, cp_async, "
                             "elect_sync, f32x2, griddepcontrol, ldmatrix, mbarrier_tx, "
                             "mma_fp8, mma_sync, setmaxnreg, st_async, stmatrix, tcgen05, tma, "
                             "wgmma")
    with pytest.raises(ValueError):
        Target("sm_90a").require("wgmma_sp")


@pytest.mark.parametrize("target, feature, what, message, hint", [
    ("sm_75", "cp_async", None, "cp.async needs sm_80 or newer; target is sm_75",
     "use a target with cp.async, e.g. sm_80, sm_89, sm_90a, sm_100a"),
    ("sm_80", "tma", "copy_async(dispatch='tma')",
     "copy_async(dispatch='tma') needs sm_90 or newer; target is sm_80",
     "use a target with TMA (cp.async.bulk.tensor), e.g. sm_90a"),
    ("sm_89", "elect_sync", None, "elect.sync needs sm_90 or newer; target is sm_89", "sm_90a"),
    ("sm_100a", "wgmma", None, "wgmma needs sm_90a; target is sm_100a",
     "targets with wgmma: sm_90a"),
    ("sm_120a", "tcgen05", "tcgen05.ld",
     "tcgen05.ld needs sm_100a, or a family target of sm_100f/sm_110f "
     "(e.g. sm_103a, sm_110a); target is sm_120a",
     "targets with tcgen05: sm_100a, sm_100f, sm_103a, sm_103f, sm_110a, sm_110f"),
    ("sm_100", "tcgen05", None, "tcgen05 needs", "sm_100a"),
])
def test_require_message(target, feature, what, message, hint):
    with pytest.raises(TargetError) as ei:
        Target(target).require(feature, what=what)
    assert ei.value.message.startswith(message)
    assert hint in ei.value.hint


@pytest.mark.parametrize("name, expected", sorted(FEATURE_TABLE.items()))
def test_require_passes_when_present(name, expected):
    for f in expected:
        assert Target(name).require(f) is None


def test_require_keeps_span():
    from tilewise.errors import Span
    span = Span("kernel.py", 3, 4, source_line="    Tx.copy_async(a, b)")
    with pytest.raises(TargetError) as ei:
        Target("sm_75").require("cp_async", span=span)
    assert str(ei.value).startswith("kernel.py:3:4: target error: cp.async needs sm_80")


# --------------------------------------------------------------------------------------------
# PTX versions


@pytest.mark.parametrize("name, version", [
    ("sm_75", (6, 3)), ("sm_80", (7, 0)), ("sm_86", (7, 1)), ("sm_89", (7, 8)),
    ("sm_90", (7, 8)), ("sm_90a", (8, 0)), ("sm_100", (8, 6)), ("sm_100a", (8, 6)),
    ("sm_100f", (8, 8)), ("sm_103a", (8, 8)), ("sm_103f", (8, 8)),
    ("sm_110a", (9, 0)), ("sm_110f", (9, 0)), ("sm_120a", (8, 7)), ("sm_120f", (8, 8)),
    ("sm_121a", (8, 8)), ("sm_88", (9, 0)),
    ("sm_75", (6, 3)),
])
def test_ptx_version(name, version):
    t = Target(name)
    assert t.ptx_version == version
    assert t.ptx_feature == f"+ptx{version[0]}{version[1]}"


@pytest.mark.parametrize("t", ALL, ids=str)
def test_ptx_feature_is_one_llvm22_knows(t):
    assert t.ptx_version in LLVM_PTX_VERSIONS
    assert t.ptx_version <= MAX_PTX_VERSION == (9, 0)


def test_ptx_feature_helper():
    assert ptx_feature((8, 8)) == "+ptx88"
    assert ptx_feature((9, 0)) == "+ptx90"


@pytest.mark.parametrize("name, feature, version", [
    ("sm_80", "cp_async", (7, 0)),
    ("sm_90", "cluster", (7, 8)),
    ("sm_90", "tma", (8, 0)),
    ("sm_90a", "wgmma", (8, 0)),
    ("sm_100a", "tcgen05", (8, 6)),  # arch-specific: PTX 8.6
    ("sm_100f", "tcgen05", (8, 8)),  # family-specific: PTX 8.8
    ("sm_103a", "tcgen05", (8, 8)),  # via sm_100f
    ("sm_110a", "tcgen05", (8, 8)),  # via sm_110f
])
def test_feature_min_ptx(name, feature, version):
    assert Target(name).feature_min_ptx(feature) == version


def test_feature_min_ptx_missing_feature():
    with pytest.raises(TargetError, match="tcgen05 needs"):
        Target("sm_120a").feature_min_ptx("tcgen05")


@pytest.mark.parametrize("name, features, version", [
    ("sm_90", [], (7, 8)),
    ("sm_90", ["cluster"], (7, 8)),
    ("sm_90", ["tma", "cluster"], (8, 0)),
    ("sm_90a", ["wgmma", "tma"], (8, 0)),
    ("sm_100a", ["tcgen05", "tma"], (8, 6)),
    ("sm_100f", ["tcgen05"], (8, 8)),
    ("sm_110a", ["tcgen05"], (9, 0)),
    ("sm_120a", ["cp_async"], (8, 7)),
    ("sm_80", ("cp_async",), (7, 0)),
])
def test_ptx_version_for(name, features, version):
    assert Target(name).ptx_version_for(features) == version


def test_ptx_version_for_missing_feature():
    with pytest.raises(TargetError, match="wgmma needs sm_90a; target is sm_100a"):
        Target("sm_100a").ptx_version_for(["tma", "wgmma"])


def test_ptx_version_for_above_llvm_max(monkeypatch):
    from tilewise import target as mod

    monkeypatch.setitem(mod.FEATURES, "future",
                        mod.Feature("future", "future op", "sm_90 or newer",
                                    (("sm_90", (9, 2)),)))
    with pytest.raises(TargetError) as ei:
        Target("sm_90a").ptx_version_for(["future"])
    assert ei.value.message == ("future op needs PTX ISA 9.2 on sm_90a, but LLVM 22 emits at "
                                "most PTX ISA 9.0")


# --------------------------------------------------------------------------------------------
# Devices


@pytest.mark.parametrize("cc, name", [
    ((7, 5), "sm_75"), ((8, 0), "sm_80"), ((8, 6), "sm_86"), ((8, 9), "sm_89"),
    ((9, 0), "sm_90a"), ((10, 0), "sm_100a"), ((10, 3), "sm_103a"), ((11, 0), "sm_110a"),
    ((12, 0), "sm_120a"), ((12, 1), "sm_121a"),
])
def test_from_device(cc, name):
    assert Target.from_device(*cc) == Target(name)


def test_from_device_unknown():
    with pytest.raises(TargetError, match=r"no target for a device of compute capability 9\.1"):
        Target.from_device(9, 1)


def test_import_is_light():
    import os
    import subprocess
    import sys

    code = ("import sys, tilewise.target; "
            "print(sorted(m for m in ('llvmlite', 'llvmlite.binding', 'cuda') "
            "if m in sys.modules))")
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_compile_and_simulate_take_target_none_as_the_default_and_refuse_numbers():
    import numpy as np

    import tilewise as tw

    k = tw.from_source('''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (32,), "float32")
    T.device_entry()
    tid = T.thread_id([32])
    A[tid] = A[tid] + 1.0
''', filename="t.py")
    assert tw.compile(k, target=None).target == Target("sm_90a")
    with pytest.raises(tw.CompileError, match="a target is a name such as 'sm_90a', not int 90"):
        tw.compile(k, target=90)
    with pytest.raises(TargetError, match="not int 90") as ei:
        tw.simulate(k, np.zeros(32, np.float32), target=90)
    assert "did you mean 'sm_90' or 'sm_90a'?" in ei.value.hint
    with pytest.raises(tw.CompileError, match="target 'sm_72' cannot be built"):
        tw.compile(k, target="sm_72")
