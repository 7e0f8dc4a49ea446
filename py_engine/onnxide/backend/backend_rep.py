"""OnnxRuntimeBackendRep: a prepared model (an InferenceSession) run with the ONNX backend's input conventions."""
try:
    from onnx.backend.base import BackendRep as _Base
except ImportError:  # pragma: no cover - onnx not installed
    _Base = object


class OnnxRuntimeBackendRep(_Base):
    def __init__(self, session):
        self._session = session

    def run(self, inputs, **kwargs):
        """Outputs as a list, for `inputs` given as a list / tuple (one per model input, in order), a dict of input
        names, or one value for a single-input model."""
        from .backend import _run_options
        names = [i.name for i in self._session.get_inputs()]
        if isinstance(inputs, (list, tuple)):
            if len(inputs) > len(names):
                raise RuntimeError(f"Model expects {len(names)} inputs, got {len(inputs)}")
            feeds = dict(zip(names, inputs))
        elif isinstance(inputs, dict) and inputs and all(k in names for k in inputs):
            feeds = dict(inputs)
        else:
            if len(names) != 1:
                raise RuntimeError(f"Model expects {len(names)} inputs, got one value")
            feeds = {names[0]: inputs}
        return self._session.run(None, feeds, _run_options(kwargs))
