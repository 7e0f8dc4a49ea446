"""OrtValue and OrtDevice as onnxruntime's Python API has them: a value that carries the device it lives on (a
numpy array on the host, an opaque device value elsewhere — runtime/devices.py), and the device naming it."""
import numpy as np

from .. import dtypes as dt
from ..errors import EPFail, InvalidArgument
from . import devices

# onnxruntime's OrtDevice type codes
_CPU, _GPU, _FPGA, _NPU = 0, 1, 2, 3
_TYPE_CODES = {"cpu": _CPU, "cuda": _GPU, "gpu": _GPU, "webgpu": _GPU, "dml": _GPU, "mock": _GPU, "fpga": _FPGA,
               "npu": _NPU}


class OrtDevice:
    """A device by name and id: `OrtDevice.make('cuda', 0)`; `device_type()` gives onnxruntime's type code."""

    def __init__(self, device):
        self._device = device

    @classmethod
    def make(cls, ort_device_name, device_id=0, vendor_id=-1):
        try:
            return cls(devices.get_device(ort_device_name, device_id))
        except ValueError as e:
            raise InvalidArgument(str(e)) from None

    def device_id(self):
        return self._device.id

    def device_type(self):
        return _TYPE_CODES.get(self._device.type, _GPU)

    def device_name(self):
        return self._device.type

    @staticmethod
    def device_mem_type():
        return 0  # default memory

    def device_vendor_id(self):
        return 0

    @staticmethod
    def cpu():
        return _CPU

    @staticmethod
    def cuda():
        return _GPU

    @staticmethod
    def default_memory():
        return 0

    def __eq__(self, other):
        return isinstance(other, OrtDevice) and other._device is self._device

    def __hash__(self):
        return id(self._device)

    def __repr__(self):
        return f"OrtDevice({self._device.type}:{self._device.id})"


def now(value, what):
    """`value`, or the result of the awaitable it is, when that result is ready without an event loop; an
    awaitable that needs one (a GPU readback in the page) raises EPFail."""
    if not hasattr(value, "__await__"):
        return value
    it = value.__await__()
    try:
        next(it)
    except StopIteration as done:
        return done.value
    raise EPFail(f"{what} must be awaited on this device: use the session's run_async")


def _element_dtype(element_type):
    """A numpy dtype from a numpy type / dtype or an ONNX element type code."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        return dt.np_dtype(int(element_type))
    return np.dtype(element_type)


class OrtValue:
    """A tensor (or sequence / map) and the device it lives on; host values wrap numpy arrays without copying."""

    def __init__(self, value, device=None):
        if isinstance(device, str):  # (older form: a device type name)
            device = devices.get_device(device)
        self._value, self._device = value, device or devices.HOST

    @classmethod
    def ortvalue_from_numpy(cls, numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        device = OrtDevice.make(device_type, device_id)._device
        array = np.asarray(numpy_obj)
        if device.is_host:
            return cls(array)
        return cls(now(device.upload(array), "Copying to the device"), device)

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape, element_type=np.float32, device_type="cpu", device_id=0,
                                     vendor_id=-1):
        return cls.ortvalue_from_numpy(np.zeros(shape, dtype=_element_dtype(element_type)), device_type, device_id)

    @property
    def device(self):
        return self._device

    def numpy(self):
        """The value as a host array (a copy read back from a device)."""
        if self._device.is_host:
            return self._value
        return now(self._device.download(self._value), "Reading a device value")

    def shape(self):
        return list(self._value.shape)

    def data_type(self):
        return dt.type_string(dt.code_of(self._value.dtype))

    def element_type(self):
        return self._value.dtype.type

    def device_name(self):
        return self._device.type

    def is_tensor(self):
        return hasattr(self._value, "shape") and hasattr(self._value, "dtype")

    def has_value(self):
        return self._value is not None

    def tensor_size_in_bytes(self):
        return int(np.prod(self._value.shape, dtype=np.int64)) * np.dtype(self._value.dtype).itemsize

    def data_ptr(self):
        if self._device.is_host:
            return self._value.ctypes.data
        ptr = getattr(self._device, "data_ptr", None)
        if ptr is None:
            raise InvalidArgument(f"A value on {self._device} has no address the host can use")
        return ptr(self._value)

    def update_inplace(self, np_arr):
        """Copy `np_arr` (same shape) into this value, on whatever device it lives."""
        arr = np.asarray(np_arr)
        if tuple(arr.shape) != tuple(self._value.shape):
            raise InvalidArgument(f"update_inplace: shape {arr.shape} differs from the value's {self._value.shape}")
        if self._device.is_host:
            np.copyto(self._value, arr)
            return
        old = self._value
        self._value = now(self._device.upload(arr.astype(old.dtype, copy=False)), "Copying to the device")
        self._device.release(old)

    def __dlpack__(self, *args, **kwargs):
        return self.numpy().__dlpack__(*args, **kwargs) if self._device.is_host else self._device_only("DLPack")

    def __dlpack_device__(self):
        return self._value.__dlpack_device__() if self._device.is_host else self._device_only("DLPack")

    def _device_only(self, what):
        raise InvalidArgument(f"{what} export of a value on {self._device} is not supported")

    def __repr__(self):
        return f"OrtValue({self.data_type() if self.is_tensor() else type(self._value).__name__}, " \
               f"shape={self.shape() if self.is_tensor() else None}, device={self._device})"


def from_external(obj, session_devices, name):
    """A feed given as a foreign tensor (DLPack / __cuda_array_interface__): a host array for CPU tensors (no copy),
    a device value where one of the session's devices can take it; else InvalidArgument naming the input."""
    if hasattr(obj, "__dlpack_device__"):
        kind, _ = obj.__dlpack_device__()
        if int(kind) == 1:  # kDLCPU
            try:
                return np.from_dlpack(obj)
            except (BufferError, TypeError, RuntimeError):  # a dtype numpy has no DLPack form of (bfloat16)
                return None
    elif not hasattr(obj, "__cuda_array_interface__"):
        return None
    for d in session_devices:
        value = d.from_external(obj)
        if value is not None:
            return value
    where = f"DLPack device type {obj.__dlpack_device__()[0]}" if hasattr(obj, "__dlpack_device__") else "CUDA"
    raise InvalidArgument(f"Input '{name}' is a tensor in {where} memory, which no execution provider of this session "
                          f"can read")
