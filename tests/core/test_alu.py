"""The one arithmetic table (tilewise.ir.alu) against an independent evaluator written from
the PTX rules in docs/ir.md: integer wrap, floor division and modulo with x // 0 == -1 and
x % 0 == x, clamped unsigned shift counts, saturating float -> int conversion. The
simulator's functions and constant folding are both the table's, so both are checked."""

import random

import numpy as np
import pytest

from tilewise.ir import alu
from tilewise.ir import dtype as dt
from tilewise.ir.expr import BinOp, IntImm, binop

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # edge values on purpose

INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
OPS = ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "min", "max",
       "<", "<=", ">", ">=", "==", "!="]


def wrap(v: int, t) -> int:
    v %= 2**t.bits
    if t.is_signed and v >= 2 ** (t.bits - 1):
        v -= 2**t.bits
    return v


def reference(op: str, a: int, b: int, t) -> int:
    if op in ("<<", ">>"):
        c = b % 2**t.bits  # the count read as unsigned
        if c >= t.bits:
            return 0 if op == "<<" or a >= 0 else -1
        return wrap(a << c, t) if op == "<<" else a >> c
    if op == "//":
        return wrap(-1, t) if b == 0 else wrap(a // b, t)
    if op == "%":
        return a if b == 0 else a % b
    py = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
          "min": min(a, b), "max": max(a, b), "<": a < b, "<=": a <= b, ">": a > b,
          ">=": a >= b, "==": a == b, "!=": a != b}[op]
    return int(py) if isinstance(py, bool) else wrap(py, t)


def _values(rng, t, n):
    lo, hi = alu.int_range(t)
    edges = [lo, hi, 0, 1, -1 if t.is_signed else 2, lo + 1, hi - 1, t.bits, t.bits - 1]
    return edges + [rng.randint(lo, hi) for _ in range(n)]


@pytest.mark.parametrize("name", INT_TYPES)
@pytest.mark.parametrize("op", OPS)
def test_integer_semantics_match_the_ptx_rules(name, op):
    t = dt.DTYPES[name]
    rng = random.Random(hash((name, op)) & 0xFFFF)
    xs = _values(rng, t, 40)
    ys = _values(rng, t, 40)
    ys = ys + [0, 0, -1 if t.is_signed else 0]
    xs = xs + [alu.int_range(t)[0]] * 3
    d = t.numpy()
    got = alu.numpy_binary(op, t)(np.array(xs[:len(ys)], d), np.array(ys[:len(xs)], d))
    for x, y, g in zip(xs, ys, got.tolist()):
        want = reference(op, x, y, t)
        assert int(g) == want, f"{x} {op} {y} ({name}): {g} != {want}"
        assert alu.fold(op, x, y, t) == want or (isinstance(want, int) and
                                                 int(alu.fold(op, x, y, t)) == want)


def test_typed_constants_fold_by_the_table():
    i32 = dt.int32
    assert binop("//", IntImm(7, i32), IntImm(0, i32)).value == -1
    assert binop("%", IntImm(-7, i32), IntImm(0, i32)).value == -7
    assert binop("<<", IntImm(1, i32), IntImm(40, i32)).value == 0
    assert binop(">>", IntImm(-8, i32), IntImm(33, i32)).value == -1
    assert binop("+", IntImm(2**31 - 1, i32), IntImm(1, i32)).value == -(2**31)
    assert isinstance(binop("+", 2, 3), IntImm)  # Python ints fold as Python does
    assert binop("+", 2**40, 1).value == 2**40 + 1


def test_float_operators_and_conversions():
    f32 = dt.float32
    x = np.array([-7.5, 7.5, 0.0, np.nan, np.inf], np.float32)
    y = np.array([2.0, -2.0, 3.0, 1.0, 2.0], np.float32)
    fd = alu.numpy_binary("//", f32)(x, y)
    md = alu.numpy_binary("%", f32)(x, y)
    assert fd[:3].tolist() == [-4.0, -4.0, 0.0]
    assert md[:3].tolist() == [0.5, -0.5, 0.0]
    assert np.isnan(alu.numpy_binary("min", f32)(np.float32(np.nan), np.float32(np.nan)))
    assert alu.numpy_binary("min", f32)(np.float32(np.nan), np.float32(2.0)) == 2.0
    conv = alu.numpy_cast(np.array([np.nan, 1e10, -1e10, -0.9, 3.99], np.float32), f32,
                          dt.int32)
    assert conv.tolist() == [0, 2**31 - 1, -(2**31), 0, 3]
    u8 = alu.numpy_cast(np.array([-5.0, 300.0, 255.5], np.float32), f32, dt.DTYPES["uint8"])
    assert u8.tolist() == [0, 255, 255]
    i64 = alu.numpy_cast(np.array([1e30, -1e30], np.float32), f32, dt.int64)
    assert i64.tolist() == [2**63 - 1, -(2**63)]


def test_every_operator_has_both_halves():
    for row in list(alu.BINARY.values()) + list(alu.UNARY.values()):
        assert callable(row.np) and callable(row.llvm) and row.kinds


def test_the_verifier_refuses_what_the_table_does_not_define():
    from tilewise.errors import VerifyError
    from tilewise.ir import PrimFunc, Var, verify
    from tilewise.ir.stmt import Evaluate

    f = Var("f", dt.float32)
    bad = BinOp("&", f, f)
    func = PrimFunc("k", (f,), (), (), Evaluate(bad))
    with pytest.raises(VerifyError, match="operator '&' is not defined on float32"):
        verify(func)
