"""Shared helpers of the simulator tests: random data, poisoned outputs, marker lines."""

from __future__ import annotations

import pathlib

import numpy as np


def rand(shape, dtype, seed=0):
    """Random data (never zeros) of any dtype, float16/bfloat16/fp8 included."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * 3 + 0.5).astype(dtype)


def poison(shape, dtype):
    """An output buffer full of a recognisable garbage pattern."""
    out = np.empty(shape, dtype)
    out.reshape(-1).view(np.uint8)[:] = 0xCD
    return out


def bits(a):
    """The raw bytes of an array (bit-exact comparison, NaNs included)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def line_of(path: str, marker: str) -> int:
    """The 1-based line of ``path`` holding ``marker`` (a comment on a kernel line)."""
    for i, text in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if marker in text and "line_of(" not in text:
            return i
    raise LookupError(marker)
