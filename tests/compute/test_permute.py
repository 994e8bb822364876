"""permute_layout: register tiles through a warp shuffle or shared memory, memory tiles
through registers (in place too); the values must arrive unchanged, bit for bit."""

import numpy as np
import pytest

from ckernels import dispatched, kernel, rand, run, same_bits
from tilewise.errors import DispatchError
from tilewise.pipeline import lower

ROW_MAJOR = "S[(4, 8, 2, 2):(8@laneid, 1@laneid, 1@warpid, 1)]"
TRANSPOSED = "S[(4, 8, 2, 2):(1@laneid, 4@laneid, 1@warpid, 1)]"  # the same warps
ACROSS_WARPS = "S[(4, 8, 2, 2):(1@tx, 8@tx, 4@tx, 1)]"  # held by another warp


@pytest.mark.parametrize("dst_layout,variant", [(TRANSPOSED, "shfl"), (ACROSS_WARPS, "smem")])
def test_register_tiles(executor, dst_layout, variant):
    k = kernel([("X", (4, 32), "float32"), ("Y", (4, 32), "float32")], [
        'ar = T.alloc_local((2,), "float32")', f"a = ar.view(4, 32, layout={ROW_MAJOR})",
        'br = T.alloc_local((2,), "float32")',
        f"b = br.view(4, 32, layout={dst_layout})",
        "Tx.cta.copy(a, X)", "Tx.cta.permute_layout(b, a)", "Tx.cta.copy(Y, b)"], 64)
    assert dispatched(k)[1] == variant
    x, y = rand((4, 32), "float32"), np.zeros((4, 32), np.float32)
    run(executor, k, [x, y])
    assert same_bits(y, x)


def test_shuffle_declines_across_warps_and_16_bit_values():
    k = kernel([("X", (4, 32), "float16")], [
        'ar = T.alloc_local((2,), "float16")', f"a = ar.view(4, 32, layout={ROW_MAJOR})",
        'br = T.alloc_local((2,), "float16")', f"b = br.view(4, 32, layout={ACROSS_WARPS})",
        "Tx.cta.copy(a, X)", 'Tx.cta.permute_layout(b, a, dispatch="shfl")'], 64)
    with pytest.raises(DispatchError, match="shfl.sync moves 32-bit values"):
        lower(k, "sm_90a")


def test_shared_memory_in_place(executor):
    """Two views of one shared buffer (row-major and column-major): the tile is transposed
    in place, loads and stores separated by a CTA barrier."""
    k = kernel([("X", (16, 16), "float32"), ("Y", (16, 16), "float32")], [
        'A = T.alloc_shared((256,), "float32")',
        "rm = A.view(16, 16, layout=S[(16, 16):(16, 1)])",
        "cm = A.view(16, 16, layout=S[(16, 16):(1, 16)])",
        "Tx.cta.copy(rm, X)", "T.cuda.cta_sync()", "Tx.cta.permute_layout(cm, rm)",
        "T.cuda.cta_sync()", "Tx.cta.copy(Y, rm)"], 64)
    assert dispatched(k)[1] == "mem"
    assert "T.cuda.cta_sync()" in lower(k, "sm_90a").func.script()
    x, y = rand((16, 16), "float32"), np.zeros((16, 16), np.float32)
    run(executor, k, [x, y])
    assert same_bits(y, x.T)
