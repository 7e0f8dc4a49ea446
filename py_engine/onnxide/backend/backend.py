"""OnnxRuntimeBackend: the onnx.backend interface (prepare / run_model / supports_device) on onnxide."""
from ..errors import InvalidArgument
from ..runtime.env import get_device
from ..runtime.options import RunOptions, SessionOptions
from ..runtime.session import InferenceSession
from .backend_rep import OnnxRuntimeBackendRep

try:  # onnx is optional: with it the backend is an onnx.backend.base.Backend
    from onnx.backend.base import Backend as _Base
except ImportError:  # pragma: no cover - onnx not installed
    _Base = object

_OPSET_LIMITS = {"": 25, "ai.onnx": 25, "ai.onnx.ml": 5, "com.microsoft": 1}


class OnnxRuntimeBackend(_Base):
    @classmethod
    def is_opset_supported(cls, model):
        """(True, "") when every opset the model imports is one onnxide runs, else (False, why)."""
        for opset in getattr(model, "opset_import", []):
            limit = _OPSET_LIMITS.get(opset.domain)
            if limit is not None and opset.version > limit:
                return False, f"Opset {opset.version} of domain '{opset.domain}' is newer than onnxide supports " \
                              f"({limit})"
        return True, ""

    @classmethod
    def is_compatible(cls, model, device=None, **kwargs):
        return cls.supports_device(device or "CPU") and cls.is_opset_supported(model)[0]

    @classmethod
    def supports_device(cls, device):
        """onnxide natively computes on the CPU."""
        return str(device).upper() in ("CPU", get_device())

    @classmethod
    def prepare(cls, model, device=None, **kwargs):
        """A BackendRep for `model`: a path, model bytes, an onnx ModelProto or an InferenceSession."""
        if isinstance(model, OnnxRuntimeBackendRep):
            return model
        if isinstance(model, InferenceSession):
            return OnnxRuntimeBackendRep(model)
        if device is not None and not cls.supports_device(device):
            raise RuntimeError(f"Incompatible device: expected CPU, got {device}")
        if hasattr(model, "SerializeToString"):
            supported, why = cls.is_opset_supported(model)
            if not supported:
                raise InvalidArgument(why)
            model = model.SerializeToString()
        options = SessionOptions()
        for key, value in kwargs.items():
            if hasattr(options, key):
                setattr(options, key, value)
        providers = kwargs.get("providers")
        return OnnxRuntimeBackendRep(InferenceSession(model, options, providers))

    @classmethod
    def run_model(cls, model, inputs, device=None, **kwargs):
        """prepare(model) then run it on `inputs`; RunOptions attributes may be keyword arguments."""
        return cls.prepare(model, device, **kwargs).run(inputs, **kwargs)

    @classmethod
    def run_node(cls, node, inputs, device=None, outputs_info=None, **kwargs):
        raise NotImplementedError("onnxide's backend runs whole models (run_model), not single nodes")


def _run_options(kwargs):
    options = RunOptions()
    for key, value in kwargs.items():
        if hasattr(options, key) and not key.startswith("_"):
            setattr(options, key, value)
    return options


is_compatible = OnnxRuntimeBackend.is_compatible
prepare = OnnxRuntimeBackend.prepare
run = OnnxRuntimeBackend.run_model
run_model = OnnxRuntimeBackend.run_model
supports_device = OnnxRuntimeBackend.supports_device
