"""The package version (one place; ``tilewise.__version__`` and the cache keys read it)."""

__version__ = "0.1.0"
