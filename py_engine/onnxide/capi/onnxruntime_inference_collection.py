"""onnxruntime's Python-level classes (onnxide's own) and its provider-argument normalization."""
import collections.abc
import warnings

from ..runtime.compile import ModelCompiler
from ..runtime.enums import OrtDeviceVendorId
from ..runtime.iobinding import IOBinding
from ..runtime.lora import AdapterFormat
from ..runtime.ortvalue import OrtDevice, OrtValue
from ..runtime.session import InferenceSession
from ..runtime.sparse import SparseTensor

Session = InferenceSession

__all__ = ["AdapterFormat", "IOBinding", "InferenceSession", "ModelCompiler", "OrtDevice", "OrtDeviceVendorId",
           "OrtValue", "Session", "SparseTensor", "check_and_normalize_provider_args", "copy_tensors",
           "get_ort_device_type"]


def check_and_normalize_provider_args(providers, provider_options, available_provider_names):
    """(names, options dicts with str keys and values) from `providers` — names or (name, options) pairs — and an
    optional parallel `provider_options` list. Bad shapes raise ValueError; a name not available warns, a repeated
    one warns and is dropped."""
    if providers is None:
        return [], []
    if not isinstance(providers, collections.abc.Sequence) or isinstance(providers, str):
        raise ValueError("'providers' should be a sequence.")
    if provider_options is None:
        pairs = [_pair(p) for p in providers]
    else:
        if not isinstance(provider_options, collections.abc.Sequence):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        if not all(isinstance(o, dict) for o in provider_options):
            raise ValueError("'provider_options' values must be dicts.")
        pairs = list(zip(providers, provider_options))
    chosen = {}
    for name, options in pairs:
        if name not in available_provider_names:
            warnings.warn(f"Specified provider '{name}' is not in available provider names.Available providers: "
                          f"'{', '.join(available_provider_names)}'")
        if name in chosen:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.")
            continue
        chosen[name] = {str(k): str(v) for k, v in options.items()}
    return list(chosen), list(chosen.values())


def _pair(provider):
    if isinstance(provider, str):
        return provider, {}
    if isinstance(provider, (tuple, list)) and len(provider) == 2 and isinstance(provider[0], str) \
            and isinstance(provider[1], dict):
        return provider[0], provider[1]
    raise ValueError("'providers' values must be either strings or (string, dict) tuples.")


def get_ort_device_type(device_type, device_index=0):
    """onnxruntime's OrtDevice type code for a device name ('cpu', 'cuda', ...)."""
    return OrtDevice.make(device_type, device_index).device_type()


def copy_tensors(src, dst, stream=None):
    """Copy each OrtValue of `src` into the one at the same place in `dst` (same shapes), across devices."""
    if len(src) != len(dst):
        raise ValueError("copy_tensors: src and dst differ in length")
    for s, d in zip(src, dst):
        d.update_inplace(s.numpy())
