"""Variants of the reductions ``Tx.<scope>.sum/max/min``: register tiles reduced in each
thread, across the lanes of a warp (shfl.sync butterflies) and across warps (shared
memory), and a memory variant."""
