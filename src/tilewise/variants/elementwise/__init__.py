"""Variants of the elementwise compute primitives (``Tx.<scope>.add``, ``exp``, ``cast``...):
registers (``reg``) and memory (``mem``)."""
