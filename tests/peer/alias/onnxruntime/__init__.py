"""Test-only alias: `onnxruntime.X.Y` is onnxide's module `onnxide.X.Y` itself; it defines no API name."""
import importlib
import importlib.abc
import importlib.util
import sys

import onnxide


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `onnxruntime.<rest>` as the already-importable `onnxide.<rest>` (the same module object)."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("onnxruntime."):
            return None
        real = "onnxide" + fullname[len("onnxruntime"):]
        try:
            if importlib.util.find_spec(real) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module("onnxide" + spec.name[len("onnxruntime"):])
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec  # importlib set the alias's spec on the shared module: give it back


sys.meta_path.insert(0, _Alias())
sys.modules[__name__] = onnxide
