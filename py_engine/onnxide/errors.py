"""onnxruntime's exception names, raised with one-line messages that name the offending thing."""
import builtins


class OnnxideError(Exception):
    """Base of every error onnxide raises on purpose."""


class Fail(OnnxideError):
    pass


class InvalidArgument(OnnxideError):
    pass


class ValueError(OnnxideError, builtins.ValueError):  # noqa: A001 - onnxruntime's name
    """A feed without a required input: onnxruntime's Python layer raises a ValueError; this one is also onnxide's."""


class NoSuchFile(OnnxideError):
    pass


class NoModel(OnnxideError):
    pass


class EngineError(OnnxideError):
    pass


class RuntimeException(OnnxideError):
    pass


class InvalidProtobuf(OnnxideError):
    pass


class ModelLoaded(OnnxideError):
    pass


class NotImplemented(OnnxideError):  # noqa: A001 - onnxruntime's name
    pass


class InvalidGraph(OnnxideError):
    pass


class EPFail(OnnxideError):
    pass


class NotFound(OnnxideError):
    pass


class ModelLoadCanceled(OnnxideError):
    pass


class ModelRequiresCompilation(OnnxideError):
    pass


class DeviceReset(OnnxideError):
    pass


__all__ = [n for n, v in dict(globals()).items() if isinstance(v, type) and issubclass(v, OnnxideError)]
