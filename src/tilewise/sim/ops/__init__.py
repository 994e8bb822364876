"""Simulator semantics of the PTX-table entries, one module per family of synchronous
instructions (``misc``, ``compute``, ``mma``, ``mbarrier``, ``cluster``) and one package per
stateful family -- ``cp_async``, ``bulk`` (bulk and TMA tensor copies, the proxy fence),
``wgmma``, ``tcgen05`` -- holding everything the simulator knows of that family: its
per-CTA state (``state.py``, a part of the async core, ``ctx.asyncs.part(name)``) and the
semantics of its instructions. Each module registers its implementations with
``@semantics`` (:mod:`tilewise.sim.registry`, which imports every module below this
package); families reach one another only through the async core
(:mod:`tilewise.sim.async_core`: mbarriers and the parts' hooks)."""
