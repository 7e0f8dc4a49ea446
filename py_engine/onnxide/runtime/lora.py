"""LoRA adapters: `.onnx_adapter` files read and written, their parameters fed to runs that activate them."""
import os

import numpy as np

from .. import dtypes as dt
from ..errors import InvalidArgument
from . import flatbuffer as fb
from .ortvalue import OrtValue

FORMAT_VERSION = 1
_IDENT = b"TORT"
# schema field order: Adapter(format_version, adapter_version, model_version, parameters),
# Parameter(name, dims, data_type, raw_data)


def _read(path):
    try:
        with open(os.fspath(path), "rb") as f:
            buf = f.read()
    except OSError as e:
        raise RuntimeError(f"Cannot read LoRA adapter file '{path}': {e.strerror}") from None
    try:
        table = fb.root(buf, _IDENT)
        params = {}
        for p in table.tables(3):
            code = p.scalar(2)
            storage = dt.np_dtype(code)
            raw = p.array(3, np.uint8)
            if dt.is_exotic(code):
                arr = dt.wrap(raw.view(np.uint16 if storage.itemsize == 2 else np.uint8), code)
            else:
                arr = raw.view(storage.newbyteorder("<")).astype(storage)
            params[p.string(0)] = OrtValue(arr.reshape(tuple(int(d) for d in p.array(1, np.int64))))
        return table.scalar(0), table.scalar(1), table.scalar(2), params
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise RuntimeError(f"'{path}' is not a valid LoRA adapter file: {e}") from None


class AdapterFormat:
    """An adapter file's contents: versions and named parameters (OrtValues)."""

    def __init__(self, adapter=None):
        self._format_version, self._adapter_version, self._model_version, self._params = FORMAT_VERSION, 0, 0, {}

    @staticmethod
    def read_adapter(file_path):
        a = AdapterFormat()
        a._format_version, a._adapter_version, a._model_version, a._params = _read(file_path)
        return a

    def export_adapter(self, file_path):
        params = []
        for name, value in self._params.items():
            arr = np.ascontiguousarray(value.numpy() if isinstance(value, OrtValue) else np.asarray(value))
            code = dt.exotic_code(arr.dtype) or dt.code_of(arr.dtype)
            raw = dt.raw(arr, code) if dt.is_exotic(code) else arr
            params.append([name, np.asarray(arr.shape, np.int64), code, np.frombuffer(raw.tobytes(), np.uint8)])
        data = fb.Builder().finish([FORMAT_VERSION, self._adapter_version, self._model_version, params], _IDENT)
        with open(os.fspath(file_path), "wb") as f:
            f.write(data)

    def get_format_version(self):
        return self._format_version

    def get_adapter_version(self):
        return self._adapter_version

    def set_adapter_version(self, version):
        self._adapter_version = int(version)

    def get_model_version(self):
        return self._model_version

    def set_model_version(self, version):
        self._model_version = int(version)

    def get_parameters(self):
        return dict(self._params)

    def set_parameters(self, params):
        self._params = {str(k): v for k, v in dict(params).items()}


class LoraAdapter:
    """A loaded adapter; activated per run with `RunOptions.add_active_adapter`, its parameters are fed to the
    model's inputs of those names (inputs whose initializers are the base weights)."""

    def __init__(self):
        self._params = {}

    def Load(self, adapter_file_path):  # noqa: N802 - onnxruntime's name
        self._params = _read(adapter_file_path)[3]

    @property
    def parameters(self):
        return dict(self._params)


def with_adapters(input_feed, run_options):
    """`input_feed` plus the parameters of `run_options`' active adapters (a name fed both ways is an error)."""
    adapters = getattr(run_options, "_adapters", None)
    if not adapters:
        return input_feed
    feeds = dict(input_feed)
    for adapter in adapters:
        for name, value in adapter._params.items():
            if name in feeds:
                raise InvalidArgument(f"Input '{name}' is both fed and set by an active LoRA adapter")
            feeds[name] = value
    return feeds
