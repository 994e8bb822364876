"""Error corpus: every dispatch mistake names the user's line, says what is wrong, and
shows no tilewise source file."""

import os
import re

import kernels_errors as E
import kernels_ldgsts as K
import pytest

from tilewise.errors import DispatchError, TargetError
from tilewise.pipeline import lower

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src", "tilewise")
OUR_FILES = {f for _, _, fs in os.walk(SRC) for f in fs if f.endswith(".py")
             and f != "__init__.py"}


def marker_line(module, name):
    with open(module.__file__) as fh:
        for i, line in enumerate(fh, 1):
            if line.rstrip().endswith(f"# ERR {name}"):
                return i
    raise LookupError(name)


CASES = [
    (E, "unknown", E.unknown_variant, "sm_90a", DispatchError,
     ["copy_async has no variant 'ldgst'", "did you mean 'ldgsts'"]),
    (E, "mbar", E.with_mbar, "sm_80", DispatchError,  # sm_90a: the bulk variant takes it
     ["cp.async groups cannot signal an mbarrier", "TMA",
      "target sm_80 has no cp.async.bulk (needs sm_90 or newer)"]),
    (E, "sm75", E.user_cp_async, "sm_75", TargetError,
     ["needs sm_80 or newer; target is sm_75"]),
    (E, "ldgsts75", E.dispatch_on_sm75, "sm_75", DispatchError,
     ["target sm_75 has no cp.async"]),
    (E, "dtype", E.dtype_mismatch, "sm_90a", DispatchError,
     ["dst is float16 but src is float32"]),
    (E, "size", E.size_mismatch, "sm_90a", DispatchError,
     ["dst has 2048 elements", "src has 4096"]),
    (E, "unknowncond", E.unknown_condition, "sm_90a", DispatchError,
     ["active threads are unknown", "N[tid] > 0"]),
    (E, "cluster", E.cluster_scope, "sm_90a", DispatchError,
     ["execution scope 'cluster' is not supported"]),
    (E, "colmajor", E.column_major_smem, "sm_90a", DispatchError,
     ["not contiguous in runs of 2 elements"]),
    (E, "copyfirst", E.copy_partial_first, "sm_90a", DispatchError,
     ["reg (priority 30)", "gmem_smem (priority 20): only 63 of the 64",
      "fallback (priority 0): thread 0, the first of its cta, is not active"]),
    (E, "elect", E.warp_elect, "sm_90a", DispatchError, ["only 1 of the 32 threads"]),
    (K, "align2", K.f16_align2, "sm_90a", DispatchError,
     ["only 2-byte aligned", "4-byte alignment"]),
    (K, "direction", K.smem_to_gmem, "sm_80", DispatchError,  # sm_90a: a bulk store
     ["copies shared -> global", "global -> shared"]),
    (K, "partial", K.partial_warp, "sm_90a", DispatchError, ["only 16 of the 32 threads"]),
]


@pytest.mark.parametrize("mod, marker, func, target, exc, texts", CASES,
                         ids=[c[1] for c in CASES])
def test_error(mod, marker, func, target, exc, texts):
    with pytest.raises(exc) as info:
        lower(func, target)
    msg = str(info.value)
    for t in texts:
        assert t in msg
    assert info.value.span.line == marker_line(mod, marker)
    assert f"{os.path.basename(mod.__file__)}:{marker_line(mod, marker)}:" in msg
    assert "src/tilewise" not in msg
    assert not [f for f in OUR_FILES if re.search(r"(?<![\w])" + re.escape(f), msg)]
