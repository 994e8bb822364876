"""docs/tutorial.md's steps (examples/tutorial/): each file runs as ``tilewise run`` runs it,
in the simulator here and (marked gpu) on the GPU, against its float64 reference with its
stated tolerance, outputs poisoned; the GPU tests add larger shapes against torch."""

import importlib.util
import pathlib
import re

import numpy as np
import pytest

from tilewise.runner import run_example

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "examples" / "tutorial"
STEPS = sorted(p.stem for p in TUTORIAL.glob("[0-9][0-9]_*.py"))


def step(name: str):
    spec = importlib.util.spec_from_file_location(name, TUTORIAL / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _kernel(mod):
    from tilewise.ir import PrimFunc

    (k,) = [v for v in vars(mod).values() if isinstance(v, PrimFunc)]
    return k


def test_the_tutorial_has_its_five_steps_and_links_each():
    assert STEPS == ["01_vector_add", "02_transpose", "03_softmax", "04_gemm",
                     "05_attention"]
    text = (ROOT / "docs" / "tutorial.md").read_text()
    for name in STEPS:
        assert f"examples/tutorial/{name}.py" in text
    assert "docs/tutorial.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", STEPS)
def test_each_step_matches_its_reference(executor, name, capsys, request):
    """As ``tilewise run`` runs it: the simulator for the file's TARGET; the GPU for its
    own target (torch carries the arrays there)."""
    mod = step(name)
    if executor == "sim":
        assert run_example(mod, _kernel(mod), mod.TARGET, force_sim=True)
    else:
        from tilewise.runtime import device_target

        request.getfixturevalue("torch")
        assert run_example(mod, _kernel(mod), str(device_target()))
    out = capsys.readouterr().out
    assert "OK, matches the reference" in out
    assert (" on GPU " if executor == "gpu" else " on simulator ") in out


def test_the_transpose_table_of_the_tutorial_is_what_the_simulator_counts():
    """The bank-conflict table in docs/tutorial.md, step 2, row by row."""
    import tilewise as tw

    mod = step("02_transpose")
    text = (ROOT / "docs" / "tutorial.md").read_text()
    rows = re.findall(r"^\| `(column|block)` \| `(plain|padded|swizzled)` \| (\d+)-way \| "
                      r"(\d+) \|", text, re.M)
    assert len(rows) == 6
    for lanes, layout, ways, conflicts in rows:  # the table's n = 256 has 16x the CTAs of 64
        a, b = mod.inputs(np.random.default_rng(0), 64)
        perf = tw.simulate(mod.make_transpose(64, layout, lanes), a, b, perf=True).perf
        (ld,) = [s for s in perf.shared if s.op == "ld"]
        assert (ld.ways, 16 * ld.conflicts) == (int(ways), int(conflicts)), (lanes, layout)


# ------------------------------------------------------------------ on the GPU
@pytest.mark.gpu
def test_transpose_layouts_on_the_gpu(torch):
    mod = step("02_transpose")
    a = torch.randn(1024, 1024, device="cuda")
    for lanes in ("column", "block"):
        for layout in ("plain", "padded", "swizzled"):
            b = torch.full_like(a, float("nan"))
            mod.make_transpose(1024, layout, lanes)(a, b)
            assert torch.equal(b, a.T), (lanes, layout)
    b = torch.full_like(a, float("nan"))
    mod.make_naive_transpose(1024)(a, b)
    assert torch.equal(b, a.T)


@pytest.mark.gpu
def test_softmax_against_torch(torch):
    mod = step("03_softmax")
    x = torch.randn(4096, 2048, device="cuda") * 4
    y = torch.full_like(x, float("nan"))
    mod.make_softmax(4096, 2048)(x, y)
    torch.testing.assert_close(y, torch.softmax(x.double(), -1).float(), rtol=mod.RTOL,
                               atol=mod.ATOL)


@pytest.mark.gpu
def test_gemm_against_torch(torch):
    mod = step("04_gemm")
    m, n, k = 512, 1024, 768
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    mod.make_gemm(m, n, k)(a, b, bias, c)
    want = torch.relu(a.double() @ b.double() + bias.double())
    torch.testing.assert_close(c.double(), want, rtol=mod.RTOL, atol=mod.ATOL)


@pytest.mark.gpu
def test_attention_against_torch(torch):
    mod = step("05_attention")
    shape = (2, 4, 512, 64)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.full(shape, float("nan"), device="cuda", dtype=torch.bfloat16)
    mod.make_attention(2, 4, 512)(q, k, v, o)
    want = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(),
                                                            v.double())
    torch.testing.assert_close(o.double(), want, rtol=mod.RTOL, atol=mod.ATOL)
