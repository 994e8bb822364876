"""Simulator semantics of ``T.print`` and ``T.device_assert`` (facts in
:mod:`tilewise.ptx.printf`).

* ``print``: every active thread prints its line, in thread order (CTA after CTA), to
  ``sys.stdout`` at once; the values are formatted after C's promotions, as vprintf does
  (the GPU's order of threads is undefined, and its output arrives at the next
  synchronisation).
* ``device_assert``: when the condition is false in any active thread, a
  :class:`~tilewise.errors.DeviceAssertError` at the assert's line names the message, the
  first failing thread and how many others failed (the GPU stops the kernel there).
"""

from __future__ import annotations

import sys

import numpy as np

from ...errors import DeviceAssertError
from ...ptx import printf
from ..registry import semantics


@semantics("print")
def device_print(ctx, site, args):
    fmt, values = args[0], args[1:]
    kinds = site.cache.get("kinds")
    if kinds is None:
        kinds = site.cache["kinds"] = [(v.dtype.kind, v.dtype.bits) for v in site.call.args[1:]]
    n = ctx.n_active()
    cols = [np.broadcast_to(np.asarray(v), (n,)).tolist() for v in values]
    lines = [printf.host_format(fmt, [c[i] for c in cols], kinds) for i in range(n)]
    sys.stdout.write("".join(lines))


@semantics("device_assert")
def device_assert(ctx, site, args):
    cond, msg = args
    act = ctx.active()
    ok = np.broadcast_to(np.asarray(cond) != 0, act.shape)
    if ok.all():
        return
    bad = act[~ok]
    more = f" and {len(bad) - 1} other thread(s)" if len(bad) > 1 else ""
    raise DeviceAssertError(f"{msg or 'T.device_assert'} [{ctx.where(int(bad[0]))}{more}]",
                            site.span, hint="on the GPU the kernel stops here and the next "
                            "CUDA call fails with CUDA_ERROR_ASSERT")
