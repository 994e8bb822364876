"""A kernel takes whatever GPU array the user has: torch, CuPy, any DLPack producer; on a
stream of the user's choosing; and bad arguments are LaunchErrors before any launch."""

import numpy as np
import pytest

import tilewise as tw

pytestmark = pytest.mark.gpu
N = 4096


def _compile(func):
    from tilewise.runtime import device_target

    return tw.compile(func, str(device_target()))


@pytest.fixture
def vector_add(example):
    return _compile(example("vector_add").make_vector_add(N))


class DLPackOnly:
    """Exposes nothing but the DLPack protocol (no torch type, no CUDA array interface)."""

    def __init__(self, inner):
        self._inner = inner

    def __dlpack__(self, *args, **kwargs):
        return self._inner.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._inner.__dlpack_device__()


def test_cupy_arrays(vector_add):
    cp = pytest.importorskip("cupy")
    k = vector_add
    a = cp.asarray(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    b = cp.asarray(np.random.default_rng(1).standard_normal(N).astype(np.float32))
    c = cp.full(N, cp.nan, dtype=cp.float32)
    k(a, b, c)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(c), cp.asnumpy(a) + cp.asnumpy(b))


def test_dlpack_only_objects_and_a_user_stream(vector_add):
    torch = pytest.importorskip("torch")
    k = vector_add
    a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    c = torch.full((N,), float("nan"), device="cuda")
    s = torch.cuda.Stream()
    torch.cuda.synchronize()
    k(DLPackOnly(a), DLPackOnly(b), DLPackOnly(c), stream=s)
    s.synchronize()
    assert torch.equal(c, a + b)


def test_wrong_shape_dtype_and_misalignment_are_launch_errors(vector_add):
    torch = pytest.importorskip("torch")
    k = vector_add
    good = torch.zeros(N, device="cuda")
    with pytest.raises(tw.LaunchError, match="'A_ptr'|'B_ptr'|'C_ptr'") as e:
        k(torch.zeros(N - 1, device="cuda"), good, good)
    assert "shape" in str(e.value)
    with pytest.raises(tw.LaunchError, match="float64"):
        k(torch.zeros(N, device="cuda", dtype=torch.float64), good, good)
    offset = torch.zeros(N + 1, device="cuda")[1:]  # 4-byte aligned, not 16
    with pytest.raises(tw.LaunchError, match="align"):
        k(offset, good, good)


def test_static_plus_dynamic_shared_memory_over_48KB_launches(example):
    """48 KB of dynamic tiles plus the static mbarriers: over the default limit together."""
    torch = pytest.importorskip("torch")
    bc = example("bulk_copy")
    k = _compile(bc.make_bulk_copy(480, 1024, "float16", (8, 1024), 32, stages=3))
    from tilewise.target import DYN_SHARED_PAD

    assert k.dynamic_smem == 48 * 1024 + DYN_SHARED_PAD  # the run-time 1024-byte rounding
    a = torch.randn(480, 1024, device="cuda").half()
    b = torch.zeros_like(a)
    k(a, b)
    torch.cuda.synchronize()
    assert torch.equal(a, b)


def test_more_shared_memory_than_the_gpu_has_is_refused_before_launch(example):
    """Past the target's maximum the compiler refuses (the runtime's own check, for a GPU
    with less shared memory than its target allows, cannot trigger on an H200)."""
    bc = example("bulk_copy")
    with pytest.raises(tw.CompileError, match="bytes of shared memory per CTA"):
        _compile(bc.make_bulk_copy(256, 4096, "float16", (8, 4096), 32, stages=8))  # 8 x 64 KB
