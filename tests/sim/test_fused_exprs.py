"""The simulator runs an integer expression tree as one generated function (sim/compiler.py
``_fused``): the same answers as the arithmetic table (wrapping, floor division, shifts of a
run-time count), and a tree deeper than one generated function holds splits into several
(a row reduction unrolled over 256 registers was a 256-deep sum, which Python's parser refused
as 'too many nested parentheses': tests/compute/test_reductions.py)."""

import numpy as np

import tilewise as tw
from tilewise import from_source

SRC = '''
@T.prim_func
def k(A_ptr: T.handle, B_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "int32")
    B = T.match_buffer(B_ptr, (128, 6), "int32")
    T.device_entry()
    tid = T.thread_id([128])
    a = A[tid]
    s: T.int32 = 7
    B[tid, 0] = (a * 65536) * 65536 + a * 40000 * 40000
    B[tid, 1] = (a - 64) // s + (a - 64) % s
    B[tid, 2] = (a << (tid % 33)) ^ (a >> 3)
    B[tid, 3] = T.max(a - 100, T.min(a, 90)) * (a & 15 | 3)
    B[tid, 4] = (a // (tid % 3)) + (a % (tid % 3))
    B[tid, 5] = {deep}
'''


def _expected(a: np.ndarray) -> np.ndarray:
    x = a.astype(np.int64)
    tid = np.arange(128)

    def wrap(v):
        return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)

    out = np.zeros((128, 6), np.int64)
    out[:, 0] = wrap(wrap(x * 65536 * 65536) + wrap(wrap(x * 40000) * 40000))
    y = wrap(x - 64)
    out[:, 1] = wrap(y // 7 + y % 7)
    sh = tid % 33  # a shift by the width or more gives 0 (the table's rule)
    out[:, 2] = wrap(np.where(sh < 32, wrap(x << np.minimum(sh, 31)), 0)) ^ (x >> 3)
    out[:, 3] = wrap(np.maximum(wrap(x - 100), np.minimum(x, 90)) * ((x & 15) | 3))
    d = tid % 3
    q = np.where(d == 0, -1, x // np.maximum(d, 1))  # x // 0 is all ones, x % 0 is x
    r = np.where(d == 0, x, x % np.maximum(d, 1))
    out[:, 4] = wrap(q + r)
    out[:, 5] = wrap(sum(x * (i % 5 - 2) for i in range(150)))
    return out


def test_fused_integer_trees_match_the_arithmetic_table():
    deep = " + ".join(f"a * {i % 5 - 2}" for i in range(150))
    k = from_source(SRC.replace("{deep}", deep), filename="fused.py")
    a = np.random.default_rng(0).integers(-2**31, 2**31, 128).astype(np.int32)
    a[:8] = [0, 1, -1, 2**31 - 1, -2**31, 64, 63, 65]
    b = np.full((128, 6), -7, np.int32)
    for checks in ("full", "none"):
        tw.simulate(k, a, b, checks=checks)
        np.testing.assert_array_equal(b.astype(np.int64), _expected(a))
