"""Op definitions: importing this package registers every numpy kernel (the CPU EP and the oracle for other EPs)."""
import importlib
import pkgutil

from .registry import lookup, op, registered_ops  # noqa: F401

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _m not in ("registry", "util"):
        importlib.import_module(f"{__name__}.{_m}")
