"""The machine's C compiler and ``<cuda.h>`` for the tests that build the C launcher
(``tilewise compile --emit c``)."""

import os
import shutil


def c_compiler() -> str | None:
    """gcc, cc or clang on PATH, the first found (None: there is none)."""
    return shutil.which("gcc") or shutil.which("cc") or shutil.which("clang")


def cuda_include() -> list[str]:
    """``["-I", <CUDA>/include]`` where ``<cuda.h>`` is found (tilewise's CUDA home, then
    /usr/local/cuda), else ``[]``: the generated header then declares the driver entry
    points itself."""
    from tilewise.knobs import knobs

    for root in (knobs.cuda_home, "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "include", "cuda.h")):
            return ["-I", os.path.join(root, "include")]
    return []
