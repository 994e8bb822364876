"""Registration by discovery: import every module of a package, so that the decorators at
the bottom of each (``@register_dispatch``, ``@lowering``, ``@semantics``) run. No module
keeps a hand-written list of the others."""

from __future__ import annotations

import importlib
import pkgutil


def import_all(package: str) -> None:
    """Import every module below the package named ``package`` (once each)."""
    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        importlib.import_module(info.name)
