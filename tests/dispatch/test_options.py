"""Options are allow-lists: each variant names the options it honours where it registers, a
primitive's options are the union, and a variant declines -- with a reason -- an option it
does not list instead of ignoring it. A string that reads as a boolean is an error."""

import pytest

import tilewise as tw
from tilewise import from_source
from tilewise.errors import DispatchError
from tilewise.tile import options as O
from tilewise.tile import registry
from tilewise.tile.primitives import PRIMITIVES

FILE = "opts.py"
COPY = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((64, 64), "float16")
    Tx.cta.copy_async(S[:, :], A[:, :]{opts})  # CALL
    T.ptx.cp_async.commit_group()
    T.ptx.cp_async.wait_group(0)
'''


def _copy(opts: str):
    src = COPY.format(opts=opts)
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if "# CALL" in ln)
    return from_source(src, filename=FILE), line


def _names(prim: str) -> set:
    return {o.name for o in PRIMITIVES[prim].options}


def test_a_primitives_options_are_the_union_of_its_variants():
    union = {o.name for v in registry.candidates("copy_async") for o in v.options}
    assert _names("copy_async") == union | {"dispatch"}
    assert {"mbar", "cta_group", "oob", "remote_cta_id", "prefetch_size"} <= union
    assert _names("gemm_async") == {"dispatch", "accum", "cta_group", "transA", "transB"}
    assert _names("copy") == {"dispatch", "fill"} and _names("add") == {"dispatch"}
    assert _names("exp") == {"dispatch", "scale", "bias", "precise", "ftz"}
    assert _names("log2") == {"dispatch", "scale", "bias", "precise"}
    assert _names("sum") == {"dispatch", "axes", "accum"}


def test_every_option_a_variant_lists_is_one_definition_of_tile_options():
    defined = {id(v) for v in vars(O).values() if isinstance(v, O.Option)}
    for op in PRIMITIVES:
        for v in registry.candidates(op):
            assert all(id(o) in defined for o in v.options), (op, v.name)


def test_an_option_no_variant_of_the_call_honours_declines_each_with_its_reason():
    """cta_group= on a plain global -> shared copy on sm_90a: ldgsts, which would take the
    copy, does not honour it (it used to ignore it); the error says so at the call."""
    func, line = _copy(", cta_group=1")
    with pytest.raises(DispatchError) as e:
        tw.compile(func, target="sm_90a")
    text = str(e.value)
    assert e.value.span.line == line
    assert ("ldgsts (priority 20): cta_group= is for TMA and tcgen05 copies; cp.async has no "
            "CTA pair") in text
    assert ("bulk (priority 25): cta_group= is an option of the tcgen05_cp, tma variants; this "
            "variant does not implement it (pass dispatch=\"tcgen05_cp\" or dispatch=\"tma\")"
            ) in text
    assert ("tcgen05_ldst (priority 12): option cta_group= does not apply to tcgen05.ld/st"
            ) in text


def test_forcing_a_variant_with_an_option_it_does_not_list():
    func, _ = _copy(", oob=\"zero\", dispatch=\"ldgsts\"")
    with pytest.raises(DispatchError, match="variant 'ldgsts' \\(forced by dispatch=\\) cannot "
                       "implement this copy_async:\n  ldgsts \\(priority 20\\): oob= is an "
                       "option of the tma variant; this variant does not implement it \\(pass "
                       "dispatch=\"tma\"\\)"):
        tw.compile(func, target="sm_90a")


def test_the_copy_still_dispatches_without_the_option():
    func, _ = _copy(", prefetch_size=128")
    k = tw.compile(func, target="sm_90a")
    assert [d.chosen for d in k.dispatch_log] == ["ldgsts"]
    assert ".L2::128B" in k.source("ptx")


def test_registering_an_option_badly_is_an_error():
    def impl(ctx):
        return None

    with pytest.raises(DispatchError, match="options= lists 'mbar'"):
        registry.register_dispatch("test_options_op", variant="a", priority=1,
                                   options=("mbar",))(impl)
    other = O.Option("mbar", "expr", "a second, different mbar")
    try:
        registry.register_dispatch("test_options_op", variant="b", priority=2,
                                   options=(O.MBAR,))(impl)
        with pytest.raises(DispatchError, match="define option 'mbar' differently"):
            registry.register_dispatch("test_options_op", variant="c", priority=3,
                                       options=(other,))(impl)
    finally:
        registry._REGISTRY.pop(("test_options_op", "cuda"), None)


@pytest.mark.parametrize("value, want", [('"false"', "False"), ('"True"', "True"),
                                         ('"0"', "False")])
def test_a_string_that_reads_as_a_bool_is_an_error_at_the_call(value, want):
    func_src = COPY.format(opts=f", prefetch_tensormap={value}")
    with pytest.raises(tw.ScriptError, match="option prefetch_tensormap= of copy_async must "
                       "be a compile-time True or False, got str") as e:
        from_source(func_src, filename=FILE)
    assert f"pass prefetch_tensormap={want}" in e.value.hint


def test_a_string_where_a_run_time_value_goes_is_an_error():
    src = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64, 64), "float32")
    T.device_entry()
    tid = T.thread_id([128])
    S = T.alloc_shared((64, 64), "float32")
    Tx.cta.copy_async(S[:, :], A[:, :], remote_cta_id="false")
'''
    with pytest.raises(tw.ScriptError, match="option remote_cta_id= of copy_async takes a "
                       "value, not the string 'false'") as e:
        from_source(src, filename=FILE)
    assert "pass remote_cta_id=False" in e.value.hint


@pytest.mark.parametrize("value, message, hint", [
    ("false", "option ftz='false' is a string; ftz takes True or False",
     "pass ftz=False (a string is not a bool: to Python 'false' is True)"),
    ("yes", "option ftz='yes' is a string; ftz takes True or False", "pass ftz=True"),
    (2, "option ftz=2 is invalid: expected flush float32 denormals", "pass ftz=True or "
     "ftz=False"),
])
def test_compile_refuses_a_bool_option_that_is_not_a_bool(value, message, hint):
    func, _ = _copy("")
    with pytest.raises(tw.CompileError) as e:
        tw.compile(func, target="sm_90a", ftz=value)
    assert message in e.value.message and hint in e.value.hint


def test_compile_takes_zero_and_one_for_a_bool_option():
    func, _ = _copy("")
    assert tw.compile(func, target="sm_90a", ftz=1).options["ftz"] is True
    assert tw.compile(func, target="sm_90a", nonportable_cluster=0).options[
        "nonportable_cluster"] is False
