"""Import shim: makes `import onnxruntime` resolve to onnxide, so third-party clients run their own pipelines on it.

    from models.ort_shim import onnxruntime_as
    with onnxruntime_as("onnxide", purge=("rapidocr_onnxruntime",)):
        import rapidocr_onnxruntime          # its `from onnxruntime import InferenceSession` now gets onnxide's
        ...

`onnxruntime_as("onnxide")` puts a module named `onnxruntime` built from onnxide's public API into sys.modules
(and on the `onnxruntime` attribute of nothing else); `onnxruntime_as("onnxruntime")` makes sure the real one is
there. `purge` names packages whose already-imported modules are dropped on entry and on exit, so that modules
binding onnxruntime names at import time (`from onnxruntime import X`) pick up the right ones. Every
InferenceSession the shim creates is recorded in `sessions` so tests can check onnxide really ran.
"""
import contextlib
import sys
import types

import onnxide


def _build_module():
    """A module named onnxruntime holding onnxide's public names (its InferenceSession recording each session), and
    onnxruntime's submodules as onnxide's own (capi.*, backend, datasets)."""
    import onnxide.backend
    import onnxide.datasets  # noqa: F401
    mod = types.ModuleType("onnxruntime", "onnxide standing in for onnxruntime (tests/models/ort_shim.py)")
    for name in dir(onnxide):
        if not name.startswith("_"):
            setattr(mod, name, getattr(onnxide, name))
    sessions = []

    class InferenceSession(onnxide.InferenceSession):
        """onnxide's session, recorded so a test can prove the client used it."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            sessions.append(self)

    mod.InferenceSession = InferenceSession
    mod.sessions = sessions
    mod.__version__ = "1.32.0"  # the onnxruntime version whose API onnxide mirrors; clients may compare it
    mod.__onnxide__ = True
    subs = {"capi": onnxide.capi, "capi.onnxruntime_pybind11_state": onnxide.capi.onnxruntime_pybind11_state,
            "capi._pybind_state": onnxide.capi._pybind_state, "backend": onnxide.backend,
            "capi.onnxruntime_inference_collection": onnxide.capi.onnxruntime_inference_collection,
            "datasets": onnxide.datasets}
    return mod, {f"onnxruntime.{k}": v for k, v in subs.items()}


def _drop(prefixes):
    for name in list(sys.modules):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            del sys.modules[name]


@contextlib.contextmanager
def onnxruntime_as(engine, purge=()):
    """Within the block `import onnxruntime` gives `engine` ("onnxide" or "onnxruntime"); yields that module."""
    saved = {k: v for k, v in sys.modules.items() if k == "onnxruntime" or k.startswith("onnxruntime.")}
    fakes = {}
    _drop(purge)
    try:
        if engine == "onnxide":
            for k in saved:
                del sys.modules[k]
            mod, fakes = _build_module()
            fakes["onnxruntime"] = mod
            sys.modules.update(fakes)
        elif engine == "onnxruntime":
            import onnxruntime as mod  # the real one (raises ImportError when absent)
            if getattr(mod, "__onnxide__", False):
                raise RuntimeError("the onnxide shim is already active")
        else:
            raise ValueError(f"unknown engine {engine!r}")
        yield mod
    finally:
        _drop(purge)
        for k, v in fakes.items():
            if sys.modules.get(k) is v:
                del sys.modules[k]
        sys.modules.update(saved)
