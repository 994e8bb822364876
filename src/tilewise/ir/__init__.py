"""The tilewise IR: dtypes, expressions, statements, buffers, PrimFunc, and the passes'
common tools (visitor/mutator, structural equality, printer, verifier)."""

from . import dtype  # the module (dtype.dtype() converts names)
from .dtype import DTYPES, DataType, from_numpy
from .equal import structural_equal
from .expr import (AddressOf, BinOp, BufferLoad, BufferRegion, Call, Cast, Expr, FloatImm,
                   IntImm, Node, Range, Select, SizeVar, StringImm, UnaryOp, Var, as_int, binop,
                   cast, cmp, const, select)
from .launch import LaunchConfig, thread_value
from .printer import script
from .stmt import (SCOPES, Assign, Break, Buffer, BufferStore, Continue, DeclBuffer, Evaluate,
                   For, IfThenElse, LetStmt, PrimFunc, SeqStmt, Stmt, ThreadBinding, TileCall,
                   While, seq)
from .verify import verify
from .visitor import Mutator, Visitor, walk

__all__ = [name for name in dir() if not name.startswith("_")]
