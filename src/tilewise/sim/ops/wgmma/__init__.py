"""Everything the simulator knows of wgmma (PTX ISA §9.7.15), in one place: :mod:`.state`
(the groups, the accumulators in flight and the shared operands being read:
``ctx.asyncs.part("wgmma")``, which also sees every ordinary register access) and
:mod:`.semantics` (``wgmma.fence``, ``commit_group``, ``wait_group``, ``mma_async``). The
geometry and descriptors are :mod:`tilewise.ptx.wgmma`'s.
"""
