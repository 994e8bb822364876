"""Matrix descriptors of the K-steps (tilewise.tile.matrix_desc.step_descriptors): the region's
descriptor bound once, each step's that plus a constant, must equal bit for bit the descriptor
built from the step's own start address, ``((u64(smem_addr(&buf[step start])) >> 4) & 0x3FFF)
| fields``. Both are run in the simulator (which executes the lowered IR, layouts applied to
the addresses) for every operand layout a wgmma or tcgen05 operand takes, at run-time ring
stages and run-time row offsets."""

import numpy as np
import pytest

import tilewise as tw
from tilewise.ir import dtype as dt
from tilewise.ir.expr import AddressOf, BufferRegion, IntImm, Range, Var, binop, cast
from tilewise.ir.stmt import Buffer, BufferStore, DeclBuffer, For, PrimFunc, ThreadBinding, seq
from tilewise.layout import swizzled_tile
from tilewise.ptx import tcgen05, wgmma
from tilewise.ptx.table import PTX_OPS
from tilewise.tile.matrix_desc import plan_operand, step_descriptors

STAGES, BLOCKS = 3, 2  # run-time ring stages x run-time row blocks of the operand
CASES = [  # (dtype, K-major, swizzle bytes, rows along M/N, K)
    *[("bfloat16", True, swz, 64, 64) for swz in (128, 64, 32, 0)],
    *[("bfloat16", False, swz, 64, 32) for swz in (128, 64, 32, 0)],
    *[("float8_e4m3", True, swz, 64, 128) for swz in (128, 64, 32, 0)],
    ("float16", False, 128, 128, 16),
    ("float32", True, 128, 64, 32),
]


def _old(fields: int, buf, coords):
    """The descriptor of a step from its own start address (the construction before
    step_descriptors)."""
    addr = PTX_OPS["ptx.smem_addr"].call([AddressOf(buf, tuple(coords))], {})
    start = binop("&", binop(">>", cast(dt.uint64, addr), IntImm(4, dt.uint32)),
                  IntImm(0x3FFF, dt.uint64))
    return binop("|", start, IntImm(fields, dt.uint64))


def _kernel(dtype: str, k_major: bool, swz: int, mn: int, kt: int, fields_of,
            cluster: int = 1):
    """A kernel writing, for every stage s and row block b, each K-step's descriptor both ways
    into O[s, b, step, 0 / 1]; the operand is S[s, b * mn : (b + 1) * mn, :] (K-major) or
    S[s, :, b * mn : (b + 1) * mn] (MN-major) of a swizzled ring."""
    bits = dt.DTYPES[dtype].bits
    k_inst = wgmma.K_OF[dtype]
    rows, cols = (BLOCKS * mn, kt) if k_major else (kt, BLOCKS * mn)
    s_buf = Buffer("S", (STAGES, rows, cols), dt.DTYPES[dtype], scope="shared.dyn",
                   layout=swizzled_tile(rows, cols, bits, swz, stages=STAGES), align=1024)
    s, b = Var("s"), Var("b")
    mn_range = Range(binop("*", b, mn), mn)
    region = BufferRegion(s_buf, (Range(s, 1), mn_range, Range(IntImm(0), kt)) if k_major
                          else (Range(s, 1), Range(IntImm(0), kt), mn_range))
    plan = plan_operand(region, 0 if k_major else 1, k_inst, True, "the operand")
    assert plan.k_major == k_major and plan.swizzle == swz
    fields = fields_of(plan)
    let, new = step_descriptors(plan, fields, s_buf)
    k_dim = 2 if k_major else 1
    o_ptr = Var("O_ptr", dt.handle)
    out = Buffer("O", (cluster, STAGES, BLOCKS, len(new), 2), dt.uint64, data=o_ptr)
    stores = [let]
    rank = Var("rank")
    for i, desc in enumerate(new):
        coords = [r.start for r in region.region]
        coords[k_dim] = coords[k_dim] + i * k_inst
        at = (rank, s, b, IntImm(i))
        stores += [BufferStore(out, at + (IntImm(0),), desc),
                   BufferStore(out, at + (IntImm(1),), _old(fields, s_buf, coords))]
    body = For(s, IntImm(0), IntImm(STAGES), "serial",
               For(b, IntImm(0), IntImm(BLOCKS), "serial", seq(*stores)))
    launch = (ThreadBinding(Var("tid"), "thread_id", (1,)),
              ThreadBinding(Var("cta"), "cta_id", (cluster,)),
              ThreadBinding(rank, "cta_id_in_cluster", (cluster,)))
    func = PrimFunc("descriptors", (o_ptr,), ((o_ptr, out),), launch,
                    seq(DeclBuffer(s_buf), body))
    return func, plan, out.shape


FIELDS = {"wgmma": lambda p: p.fields(),
          "tcgen05": lambda p: tcgen05.smem_desc_fields(p.lbo, p.sbo, p.swizzle)}


@pytest.mark.parametrize("cluster", [1, 2])
@pytest.mark.parametrize("inst", sorted(FIELDS))
@pytest.mark.parametrize("dtype,k_major,swz,mn,kt", CASES)
def test_each_steps_descriptor_is_the_one_of_its_own_start_address(inst, dtype, k_major, swz,
                                                                    mn, kt, cluster):
    """With a cluster of two, CTA rank 1's shared addresses carry its rank at bit 24 (as on
    the H200): the region's start must be masked to the field."""
    func, plan, shape = _kernel(dtype, k_major, swz, mn, kt, FIELDS[inst], cluster)
    o = np.zeros(shape, np.uint64)
    tw.simulate(func, o, target="sm_90a")
    new, old = o[..., 0], o[..., 1]
    assert (old != 0).all()
    assert all(len({int(x) for x in o.ravel()}) == o.size for o in old)  # distinct per CTA
    np.testing.assert_array_equal(new, old)
    # every step's start address is the region's plus its constant offset
    np.testing.assert_array_equal((new & 0x3FFF) - (new[..., :1] & 0x3FFF),
                                  np.broadcast_to(np.array(plan.step_bytes) // 16, new.shape))


def test_a_wgmma_binds_each_operands_descriptor_once_and_adds_a_constant_per_step():
    from kernels_gemm import make_wgmma

    from tilewise.pipeline import lower

    text = lower(make_wgmma(K=64), "sm_90a").func.script()
    assert text.count("T.ptx.smem_addr") == 2  # A's and B's, not one per step and operand
    assert text.count("T.ptx.wgmma.mma_async(") == 4
    # A K-major (32 bytes a step), B MN-major (16 rows of 128 bytes a step)
    assert "As_desc + T.uint32(2)" in text and "Bs_desc + T.uint32(128)" in text
