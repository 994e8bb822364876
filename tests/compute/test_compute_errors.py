"""Error corpus of the compute primitives: every mistake is a TilewiseError at the user's
line (marked ``# <-``) that says what is wrong and what to change, with no tilewise file
in it."""

import pytest

import tilewise as tw
from errcheck import check_error
from tilewise.pipeline import lower

FILE = "user_compute.py"
HEAD = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle, H_ptr: T.handle, I_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4, 256), "float32")
    B = T.match_buffer(B_ptr, (256,), "float32")
    H = T.match_buffer(H_ptr, (4, 256), "float16")
    I = T.match_buffer(I_ptr, (4, 256), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    M = T.alloc_shared((4, 1), "float32")
'''


def body(*lines: str) -> str:
    return HEAD + "".join("    " + ln + "\n" for ln in lines)


CASES = [
    ("broadcast", "has shape (3,), which does not broadcast to the destination's (4, 256)",
     "extent 1", body("Tx.cta.add(A, A, B[0:3])  # <-")),
    ("axes", "axes=2 names axis 2, but src has 2 dimension(s)", "axes in -2..1",
     body("Tx.cta.sum(M, A, axes=2)  # <-")),
    ("no-axes", "axes=() reduces nothing", "axes=-1", body("Tx.cta.sum(M, A, axes=())  # <-")),
    ("dtype", "src2 H[0:4, 0:256] is float16 but must be float32", "Tx.cast",
     body("Tx.cta.add(A, A, H)  # <-")),
    ("scalar-for-region", "operand 'src' of Tx.exp must be a buffer region", "A[0:128, 0:32]",
     body("Tx.cta.exp(A, 1.0)  # <-")),
    ("region-for-scalar", "operand 'value' of Tx.fill must be a scalar", "0.0 or A[i, j]",
     body("Tx.cta.fill(A, B)  # <-")),
    ("float-op-on-int", "dst is int32; exp takes float tiles", "Tx.cast",
     body("Tx.cta.exp(I, I)  # <-")),
    ("option", "exp has no option 'scal'", "did you mean 'scale'",
     body("Tx.cta.exp(A, A, scal=2.0)  # <-")),
    ("arity", "Tx.add takes 3 operands (dst, src1, src2), got 2", None,
     body("Tx.cta.add(A, A)  # <-")),
    ("reduced-shape", "has shape (256,); reducing axes (1,) of src's (4, 256) gives (4,)",
     "give dst the shape (4,) or (4, 1)", body("Tx.cta.sum(B, A, axes=-1)  # <-")),
    ("reduce-dtype", "dst is float32 but src is float16; a reduction accumulates in src's "
     "dtype", "Tx.cast", body("Tx.cta.max(M, H, axes=-1)  # <-")),
    ("accum", "option accum= of sum must be a compile-time True or False", None,
     body("Tx.cta.sum(M, A, axes=-1, accum=1)  # <-")),
    ("permute-shape", "dst A[0:4, 0:256] has shape (4, 256) but src B[0:256] has (256,)",
     "same shape", body("Tx.cta.permute_layout(A, B)  # <-")),
    ("literal-fits", "the constant 100000.0 does not fit", "wider float",
     body("Tx.cta.fill(H, 100000.0)  # <-")),
    ("runtime-scalar-dtype", "src2 of Tx.mul holds float32 but the value is int32", "T.cast",
     body("Tx.cta.mul(A, A, tid)  # <-")),
    ("axes-type", "option axes= of max must be an axis or a tuple of axes", "axes=-1",
     body('Tx.cta.max(M, A, axes="last")  # <-')),
]


@pytest.mark.parametrize("name,message,hint,src", CASES, ids=[c[0] for c in CASES])
def test_parse_errors(name, message, hint, src):
    with pytest.raises(tw.TilewiseError) as info:
        tw.from_source(src, filename=FILE)
    check_error(info.value, message, hint, src, FILE)


DISPATCH = [
    ("not-held", ["does not hold, in thread", "register operands must be held by the threads",
                  "mem (priority 20): dst 'y' is a register tile"],
     body('xr = T.alloc_local((8,), "float32")',
          "x = xr.view(4, 256, layout=S[(4, 1, 32, 8):(32@tx, 8, 1@tx, 1)])",
          'yr = T.alloc_local((8,), "float32")',
          "y = yr.view(4, 256, layout=S[(4, 1, 32, 8):(1@tx, 8, 4@tx, 1)])",
          "Tx.cta.add(y, x, 1.0)  # <-")),
    ("per-thread-array", ["per-thread local array", "write Tx.thread.exp"],
     body('a = T.alloc_local((8,), "float32")', "Tx.cta.exp(a, a)  # <-")),
    ("register-into-memory", ["a memory destination cannot read registers", "Tx.copy"],
     body('xr = T.alloc_local((8,), "float32")',
          "x = xr.view(4, 256, layout=S[(4, 1, 32, 8):(32@tx, 8, 1@tx, 1)])",
          "Tx.cta.add(A, A, x)  # <-")),
]


@pytest.mark.parametrize("name,parts,src", DISPATCH, ids=[c[0] for c in DISPATCH])
def test_dispatch_errors(name, parts, src):
    func = tw.from_source(src, filename=FILE)
    with pytest.raises(tw.DispatchError) as info:
        lower(func, "sm_90a")
    check_error(info.value, parts[0], None, src, FILE)
    for p in parts[1:]:
        assert p in str(info.value) + (info.value.hint or ""), str(info.value)
