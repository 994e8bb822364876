"""The examples on a real GPU, compared with numpy (bit for bit for copies)."""

import numpy as np
import pytest

import tilewise as tw
from tilewise.runtime import device_target

pytestmark = pytest.mark.gpu


def _target():
    return str(device_target())


def test_seed_demo_bit_exact(example, torch):
    ex = example("ldgsts_copy")
    k = tw.compile(ex.copy_async, _target())
    a = torch.randn(128, 32, dtype=torch.float16, device="cuda")
    b = torch.full_like(a, float("nan"))
    k(a, b)
    torch.cuda.synchronize()
    assert torch.equal(a.view(torch.int16), b.view(torch.int16))


def test_vector_add(example, torch):
    ex = example("vector_add")
    n = 1_000_003
    k = tw.compile(ex.make_vector_add(n), _target())
    a, b = (torch.randn(n, device="cuda") for _ in range(2))
    c = torch.empty_like(a)
    k(a, b, c)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(c.cpu().numpy(), (a + b).cpu().numpy())


def test_pow(example, torch):
    ex = example("pow")
    n = 1 << 20
    k = tw.compile(ex.make_pow(n), _target())
    rng = np.random.default_rng(0)
    a_np, b_np, _ = ex.inputs(rng, n)
    a, b = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
    c = torch.empty_like(a)
    k(a, b, c)
    torch.cuda.synchronize()
    want = ex.reference(a_np, b_np, None)[2]
    np.testing.assert_allclose(c.cpu().numpy(), want, rtol=4 * np.finfo(np.float32).eps)


def _random(torch, shape, dtype):
    tdt = getattr(torch, dtype)
    if dtype == "int8":
        return torch.randint(-128, 127, shape, dtype=tdt, device="cuda")
    return torch.randn(shape, device="cuda").to(tdt)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8"])
@pytest.mark.parametrize("shape", [(1024, 2048), (1000, 1000), (333, 777)])
def test_tiled_copy_exact(example, torch, dtype, shape):
    ex = example("tiled_copy")
    k = tw.compile(ex.make_tiled_copy(*shape, dtype), _target())
    a = _random(torch, shape, dtype)
    b = torch.zeros_like(a)
    k(a, b)
    torch.cuda.synchronize()
    assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def test_cpu_array_is_a_launch_error(example):
    ex = example("vector_add")
    k = tw.compile(ex.make_vector_add(256), _target())
    x = np.zeros(256, np.float32)
    with pytest.raises(tw.LaunchError, match="tw.simulate"):
        k(x, x, x)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8"])
def test_tma_copy_one_kernel_every_size(example, torch, dtype):
    """One compiled TMA copy serves every array size: tails hang over the edges, filled on
    load and skipped on store; the tensor maps are encoded per array at launch."""
    ex = example("tma_copy")
    k = tw.compile(ex.make_tma_copy(dtype), _target())
    for shape in [(4096, 4096), (1000, 1008), (333, 784), (1, 16)]:
        a = _random(torch, shape, dtype)
        b = torch.zeros_like(a)
        k(a, b)
        torch.cuda.synchronize()
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), shape


def test_tma_row_pitch_is_checked_before_the_launch(example, torch):
    ex = example("tma_copy")
    k = tw.compile(ex.make_tma_copy("float16"), _target())
    a = torch.zeros(64, 100, dtype=torch.float16, device="cuda")
    with pytest.raises(tw.LaunchError, match="is 200 bytes; TMA needs a positive multiple of 16"):
        k(a, a.clone())
