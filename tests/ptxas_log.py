"""``assemble(kernel)``: ptxas's ``-v`` report of a compiled kernel's PTX for sm_90a
(whole-program, so setmaxnreg is honoured), for tests that check registers and spills.
Skips the calling test where this machine has no ptxas."""

import subprocess
import tempfile

import pytest


def assemble(kernel, arch: str = "sm_90a") -> str:
    """ptxas's stderr (its report) for ``kernel`` (a compiled ``tw.compile`` result);
    the assembly must succeed."""
    from tilewise.codegen.cubin import find_ptxas

    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas on this machine")
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(kernel.source("ptx"))
        f.flush()
        r = subprocess.run([ptxas, f"-arch={arch}", "-O3", "-v", f.name, "-o", "/dev/null"],
                           capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stderr
