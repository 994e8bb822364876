import pytest

from tilewise.knobs import override


@pytest.fixture(autouse=True)
def _private_cache(tmp_path):
    """Every test gets an empty cache folder of its own."""
    with override(cache_dir=str(tmp_path / "cache"), cache_enabled=True) as k:
        yield k
