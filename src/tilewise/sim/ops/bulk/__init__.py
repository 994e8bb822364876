"""Everything the simulator knows of the copy engine (bulk and tensor copies, PTX ISA
§9.7.9.25.4-5) and the async proxy, in one place:

* :mod:`.state`: copies landed and still owned, stores still reading their source, the
  bulk groups, the generic/async proxy shadow (``ctx.asyncs.part("bulk")``);
* :mod:`.copies`: ``cp.async.bulk`` global <-> shared and into another CTA of the
  cluster, the bulk groups, ``fence.proxy.async``;
* :mod:`.tensor`: the TMA tensor copies (``cp.async.bulk.tensor``, reductions,
  ``prefetch.tensormap``);
* :mod:`.tensormap`: the tensor maps a launch binds, and the box geometry they give.
"""
