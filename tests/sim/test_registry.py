"""Every entry of the PTX table has simulator semantics, and nothing else does."""

from tilewise.ptx.table import PTX_OPS
from tilewise.sim.registry import load_all


def test_every_table_entry_has_semantics():
    registry = load_all()
    assert sorted(set(PTX_OPS) - set(registry)) == []
    assert sorted(set(registry) - set(PTX_OPS)) == []


def test_simulate_is_exposed_lazily():
    import tilewise as tw
    from tilewise.sim import simulate

    assert tw.simulate is simulate
