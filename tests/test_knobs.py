"""Settings are read once, typed, from the environment (knobs.py) and nowhere else."""

import pathlib
import re

from tilewise.knobs import Knobs

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "tilewise"


def test_defaults_and_overrides_from_an_environment():
    k = Knobs.from_env({"HOME": "/h", "XDG_CACHE_HOME": "/c"})
    assert (k.cache_dir, k.cache_enabled, k.dump_dir, k.sim_strict, k.cuda_home) == (
        "/c/tilewise", True, None, True, "/usr/local/cuda")
    k = Knobs.from_env({"TILEWISE_CACHE_DIR": "/x", "TILEWISE_CACHE": "0",
                        "TILEWISE_SIM_STRICT": "off", "CUDA_HOME": "/opt/cuda",
                        "TILEWISE_DUMP_DIR": "/d"})
    assert (k.cache_dir, k.cache_enabled, k.dump_dir, k.sim_strict, k.cuda_home) == (
        "/x", False, "/d", False, "/opt/cuda")


def test_no_module_but_knobs_reads_the_environment():
    readers = [p.relative_to(SRC) for p in SRC.rglob("*.py")
               if p.name != "knobs.py" and re.search(r"os\.environ|getenv", p.read_text())]
    assert readers == []
