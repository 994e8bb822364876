"""Property: any expression the printer writes parses back to the same tree (precedence,
parentheses, unary operators, calls) — checked on random trees."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampling import examples
from tilewise import from_source
from tilewise.ir import (BinOp, IntImm, LetStmt, Select, UnaryOp, Var, script, seq,
                         structural_equal)
from tilewise.ir import dtype as dt

HEAD = """
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (8,), "int32")
    T.device_entry()
    a = T.thread_id([32])
    b: T.int32 = a + 3
    c: T.int32 = a * 5
"""
INT_OPS = ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "min", "max"]
CMP_OPS = ["<", "<=", ">", ">=", "==", "!="]


def _has_var(e) -> bool:
    if isinstance(e, Var):
        return True
    return any(_has_var(getattr(e, f)) for f in ("a", "b", "cond", "true_value", "false_value")
               if hasattr(e, f))


def ints(vars_):
    leaf = st.one_of(st.sampled_from(vars_), st.integers(2, 9).map(IntImm))

    def extend(inner):
        binary = st.builds(lambda op, x, y: BinOp(op, x, y) if _has_var(x) or _has_var(y)
                           else BinOp(op, x, vars_[0]),
                           st.sampled_from(INT_OPS), inner, inner)
        unary = st.builds(lambda op, x: UnaryOp(op, x) if _has_var(x) else x,
                          st.sampled_from(["-", "~"]), inner)
        sel = st.builds(lambda c, x, y: Select(c, x, y), bools(inner, vars_), inner, inner)
        return st.one_of(binary, unary, sel)

    return st.recursive(leaf, extend, max_leaves=12)


def bools(int_exprs, vars_):
    cmp_ = st.builds(lambda op, x, y: BinOp(op, x, y if _has_var(x) or _has_var(y)
                                            else vars_[0]),
                     st.sampled_from(CMP_OPS), int_exprs, int_exprs)
    return st.recursive(cmp_, lambda inner: st.one_of(
        st.builds(lambda op, x, y: BinOp(op, x, y), st.sampled_from(["and", "or"]), inner,
                  inner),
        st.builds(lambda x: UnaryOp("not", x), inner)), max_leaves=3)


TEMPLATE = from_source(HEAD)
LETS = [s for s in TEMPLATE.body.stmts if isinstance(s, LetStmt)]
VARS = [TEMPLATE.launch[0].var] + [s.var for s in LETS]


@pytest.mark.slow  # all 150 examples in CI, a third by default
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
@settings(max_examples=examples(150), deadline=None)
@given(ints(VARS))
def test_printed_expressions_parse_back_identically(e):
    func = TEMPLATE.with_body(seq(*TEMPLATE.body.stmts, LetStmt(Var("r", dt.int32), e)))
    text = script(func)
    again = from_source(text)
    assert structural_equal(func, again), text
