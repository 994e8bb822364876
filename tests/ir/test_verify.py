"""The verifier names the failing node and the user's line for every broken invariant."""

import dataclasses

import pytest

from tilewise import T, Tx
from tilewise.errors import VerifyError
from tilewise.ir import (BinOp, BufferLoad, BufferStore, FloatImm, IntImm, LetStmt, SeqStmt,
                         TileCall, Var, seq, verify)
from tilewise.pipeline import lower


@T.prim_func
def small(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (4, 8), "float32")
    T.device_entry()
    tid = T.thread_id([32])
    s = T.alloc_shared((4, 8), "float32")
    x = tid + 1
    Tx.cta.copy(s[:, :], A[:, :])


def _stmts():
    return list(small.body.stmts)


def _with(*stmts):
    return small.with_body(seq(*stmts))


def test_a_well_formed_kernel_verifies():
    assert verify(small) is small
    flat = lower(small, "sm_90a").func
    assert verify(flat, flat=True) is flat


def test_variable_used_outside_its_scope():
    ghost = Var("ghost")
    bad = _with(*_stmts(), LetStmt(Var("y"), ghost + 1, span=_stmts()[1].span))
    with pytest.raises(VerifyError, match="variable 'ghost' is used outside its scope") as e:
        verify(bad)
    assert e.value.span.file == __file__


def test_buffer_used_outside_the_block_that_declares_it():
    decl, let, call = _stmts()
    s = decl.buffer
    bad = _with(let, BufferStore(s, (IntImm(0), IntImm(0)), FloatImm(1.0), span=let.span))
    with pytest.raises(VerifyError, match="buffer 's' is used outside the block"):
        verify(bad)


def test_wrong_number_of_indices_names_the_node():
    decl, let, call = _stmts()
    a = small.buffer_map[0][1]
    bad = _with(decl, let, BufferStore(a, (IntImm(0),), FloatImm(1.0), span=let.span))
    with pytest.raises(VerifyError, match=r"'A' has 2 dimensions, indexed with 1 \(in BufferStore\)"):
        verify(bad)


def test_operand_types_must_agree():
    decl, let, call = _stmts()
    a = small.buffer_map[0][1]
    mixed = BinOp("+", BufferLoad(a, (IntImm(0), IntImm(0))), IntImm(1))
    bad = _with(decl, LetStmt(Var("z", a.dtype), mixed, span=let.span))
    with pytest.raises(VerifyError, match="operands of '\\+' have types float32 and int32") as e:
        verify(bad)
    assert "T.cast" in e.value.hint


def test_flat_ir_rejects_a_tile_call_left_over():
    call = _stmts()[-1]
    with pytest.raises(VerifyError, match="tile primitive 'copy' was not dispatched") as e:
        verify(_with(_stmts()[1], call), flat=True)
    assert isinstance(call, TileCall) and e.value.span.line == call.span.line


def test_flat_ir_rejects_a_multi_dimensional_buffer():
    decl, let, call = _stmts()
    with pytest.raises(VerifyError, match="buffer 's' is not flattened"):
        verify(_with(decl), flat=True)


def test_assignment_needs_a_declaration():
    from tilewise.ir import Assign

    let = _stmts()[1]
    bad = _with(Assign(Var("w"), IntImm(3), span=let.span))
    with pytest.raises(VerifyError, match="assignment to 'w' before its declaration"):
        verify(bad)


def test_seq_of_nothing_is_fine():
    assert verify(dataclasses.replace(small, body=SeqStmt(()))) is not None
