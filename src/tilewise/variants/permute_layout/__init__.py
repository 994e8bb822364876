"""Variants of ``Tx.<scope>.permute_layout(dst, src)``: the same tile held under another
layout (registers through a warp shuffle or shared memory; memory through registers)."""
