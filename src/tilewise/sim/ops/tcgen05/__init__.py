"""Everything the simulator knows of the tcgen05 family (PTX ISA §9.7.16), in one place:

* :mod:`.tmem`: tensor memory of one CTA and its allocator (``ctx.tmem``);
* :mod:`.state`: the MMAs and copies in flight, their commits, the cells and shared operands
  they own (``ctx.asyncs.part("tcgen05")``);
* :mod:`.alloc`: ``alloc`` / ``dealloc`` / ``relinquish_alloc_permit``, ``wait::ld`` /
  ``wait::st``, the fences, and the leak check at CTA exit;
* :mod:`.ldst`: ``tcgen05.ld`` / ``tcgen05.st`` (registers <-> cells);
* :mod:`.mma`: ``tcgen05.mma`` (and ``.ts``), ``tcgen05.cp``, ``tcgen05.commit``.

The geometry and encodings are :mod:`tilewise.ptx.tcgen05`'s, shared with the code
generator.
"""
