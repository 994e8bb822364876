"""Everything the simulator knows of ``cp.async`` (LDGSTS, PTX ISA §9.7.9.25.3), in one
place: :mod:`.state` (the copies in flight, their groups and mbarrier triggers:
``ctx.asyncs.part("cp_async")``) and :mod:`.semantics` (the copy, ``commit_group``,
``wait_group`` / ``wait_all``, ``cp.async.mbarrier.arrive``).
"""
