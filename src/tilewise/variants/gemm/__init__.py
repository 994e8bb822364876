"""Variants of gemm (synchronous tensor-core matrix multiply-accumulate of register tiles)."""
