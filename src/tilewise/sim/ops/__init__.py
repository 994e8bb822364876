"""Simulator semantics of the PTX-table entries, one module per family; each registers its
implementations with ``@semantics`` (:mod:`tilewise.sim.registry`), which imports every
module of this package. Asynchronous state lives in :mod:`tilewise.sim.async_core`
(``ctx.asyncs``) and tensor memory in :mod:`tilewise.sim.tmem` (``ctx.tmem``): the modules
here check operands and call those, never each other."""
