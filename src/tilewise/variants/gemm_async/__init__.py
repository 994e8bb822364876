"""Variants of gemm_async (asynchronous tensor-core matrix multiply-accumulate)."""
