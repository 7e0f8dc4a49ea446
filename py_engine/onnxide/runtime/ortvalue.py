"""OrtValue and OrtDevice, one class each for onnxruntime's Python and C API layers."""
import numpy as np

from .. import dtypes as dt
from ..errors import EPFail, InvalidArgument
from . import devices
from .enums import OrtDeviceVendorId as Vendor

# onnxruntime's OrtDevice type codes (OrtDevice.dml() is a type of its own at the C level)
_CPU, _GPU, _FPGA, _NPU, _DML = 0, 1, 2, 3, 4
# device names onnxruntime's OrtDevice.make knows: (type code, vendor id)
_KNOWN = {"cpu": (_CPU, Vendor.NONE), "cuda": (_GPU, Vendor.NVIDIA), "gpu": (_GPU, Vendor.NONE),
          "dml": (_GPU, Vendor.MICROSOFT), "webgpu": (_GPU, Vendor.NONE), "npu": (_NPU, Vendor.NONE),
          "cann": (_NPU, Vendor.HUAWEI), "fpga": (_FPGA, Vendor.NONE)}


def _name_of(device_type, vendor_id):
    """The device name a C-level (type code, vendor) pair stands for."""
    if device_type == _CPU:
        return "cpu"
    if device_type == _DML or (device_type == _GPU and vendor_id == Vendor.MICROSOFT):
        return "dml"
    if device_type == _GPU:
        return "cuda"
    if device_type == _NPU:
        return "cann" if vendor_id == Vendor.HUAWEI else "npu"
    return "fpga"


class OrtDevice:
    """A device by kind and id. `OrtDevice.make('cuda', 0)` (python API) or `OrtDevice(OrtDevice.cuda(),
    OrtDevice.default_memory(), 0)` (C API); naming a device onnxide has no EP for is fine, allocating on it is
    not (RuntimeError, as onnxruntime's CPU build)."""

    def __init__(self, device_type, mem_type=0, device_id=0, vendor_id=None, name=None):
        if isinstance(device_type, OrtDevice):  # the python API's OrtDevice(c_device)
            o = device_type
            device_type, mem_type, device_id, vendor_id, name = o._type, o._mem, o._id, o._vendor, o._name
        self._type, self._mem, self._id = int(device_type), int(mem_type), int(device_id)
        self._vendor = int(vendor_id) if vendor_id is not None and vendor_id >= 0 else 0
        self._name = name or _name_of(self._type, self._vendor)

    @classmethod
    def make(cls, ort_device_name, device_id=0, vendor_id=-1):
        name = str(ort_device_name).lower()
        if name in _KNOWN:
            code, vendor = _KNOWN[name]
        elif name in devices.device_types():  # an onnxide device without an onnxruntime name: a GPU kind
            code, vendor = _GPU, Vendor.NONE
        else:
            raise InvalidArgument(f"Unsupported device type: {ort_device_name}")
        return cls(code, 0, device_id, vendor if vendor_id is None or vendor_id < 0 else vendor_id, name)

    @classmethod
    def of(cls, device):
        """The OrtDevice naming a runtime Device."""
        known = _KNOWN.get(device.type, (_GPU, Vendor.NONE))
        return cls(known[0], 0, device.id, known[1], device.type)

    def _runtime(self):
        """The runtime Device this names; RuntimeError where no execution provider registers it here."""
        try:
            return devices.get_device(self._name, self._id)
        except ValueError:
            raise RuntimeError(f"Can't allocate memory on the {self._name} device with onnxide here: no execution "
                               f"provider for it is available") from None

    @property
    def _device(self):
        return self._runtime()

    def _get_c_device(self):
        return self

    def device_id(self):
        return self._id

    def device_type(self):
        return self._type

    def device_mem_type(self):
        return self._mem

    def device_vendor_id(self):
        return self._vendor

    mem_type, vendor_id = device_mem_type, device_vendor_id  # the C API's names

    def device_name(self):
        return self._name

    @staticmethod
    def cpu():
        return _CPU

    @staticmethod
    def cuda():
        return _GPU

    @staticmethod
    def gpu():
        return _GPU

    @staticmethod
    def webgpu():
        return _GPU

    @staticmethod
    def dml():
        return _DML

    @staticmethod
    def npu():
        return _NPU

    @staticmethod
    def cann():
        return _NPU

    @staticmethod
    def fpga():
        return _FPGA

    @staticmethod
    def default_memory():
        return 0

    def _key(self):
        return self._name, self._id, self._mem

    def __eq__(self, other):
        return isinstance(other, OrtDevice) and other._key() == self._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"OrtDevice({self._name}:{self._id})"


def as_device(device_type="cpu", device_id=0, vendor_id=-1):
    """The runtime Device for an OrtDevice or a device name and id."""
    if isinstance(device_type, OrtDevice):
        return device_type._runtime()
    return OrtDevice.make(device_type, device_id, vendor_id)._runtime()


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


def _itemsize_bits(code):
    if code == dt.STRING:
        return 32 * 8  # onnxruntime's std::string
    if code in dt.SMALL_INTS:
        return dt.SMALL_INTS[code][0]
    if code == dt.FLOAT4E2M1:
        return 4
    return dt.np_dtype(code).itemsize * 8


class OrtValue:
    """A tensor (or sparse tensor, sequence, map) and the device it lives on; host values wrap numpy arrays without
    copying."""

    def __init__(self, value, device=None):
        if isinstance(value, OrtValue):  # the python API's OrtValue(c_value)
            value, device = value._value, value._device
        elif isinstance(device, str):  # (older form: a device type name)
            device = devices.get_device(device)
        self._value, self._device = value, device or devices.HOST

    # --- making values -----------------------------------------------------------------------------------------
    @classmethod
    def ortvalue_from_numpy(cls, numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        """`numpy_obj` as an OrtValue on that device (a device name and id, or an OrtDevice); no copy on the host."""
        device = as_device(device_type, device_id, vendor_id)
        array = np.asarray(numpy_obj)
        if device.is_host:
            return cls(array)
        return cls(now(device.upload(array), "Copying to the device"), device)

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data, onnx_element_type):
        """`data` reinterpreted as ONNX element type `onnx_element_type` (same item size: bit patterns of bfloat16
        or float8 in uint16 / uint8 arrays), without a copy."""
        code = int(onnx_element_type)
        array = np.asarray(data)
        target = dt.np_dtype(code)
        if array.dtype.itemsize != target.itemsize:
            raise RuntimeError(f"Items size in the incoming array: {array.dtype.itemsize} specified by onnxtype: "
                               f"{target.itemsize}")
        if dt.is_exotic(code):
            return cls(dt.wrap(array.view(np.uint16 if target.itemsize == 2 else np.uint8), code))
        return cls(array.view(target))

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape, element_type=np.float32, device_type="cpu", device_id=0,
                                     vendor_id=-1):
        """A zero-filled value of that shape and element type (a numpy type or an ONNX element type code)."""
        device = as_device(device_type, device_id, vendor_id)
        array = np.zeros(tuple(shape), dtype=_element_dtype(element_type))
        return cls(array) if device.is_host else cls(now(device.upload(array), "Copying to the device"), device)

    @classmethod
    def ort_value_from_sparse_tensor(cls, sparse_tensor):
        return cls(sparse_tensor)

    # --- the python API's view of its C value ------------------------------------------------------------------
    @property
    def _ortvalue(self):
        return self

    def _get_c_value(self):
        return self

    # --- what it holds -----------------------------------------------------------------------------------------
    @property
    def device(self):
        return self._device

    def numpy(self):
        """The value as a host array (a copy read back from a device)."""
        if self.is_sparse_tensor():
            raise RuntimeError("This OrtValue holds a SparseTensor: use as_sparse_tensor()")
        if self._device.is_host:
            return self._value
        return now(self._device.download(self._value), "Reading a device value")

    def as_sparse_tensor(self):
        if not self.is_sparse_tensor():
            raise RuntimeError("This OrtValue does not contain SparseTensor. Check data_type() value.")
        return self._value

    def shape(self):
        if self.is_sparse_tensor():
            return self._value.dense_shape()
        return list(self._value.shape)

    def data_type(self):
        if self.is_sparse_tensor():
            return self._value.data_type()
        if isinstance(self._value, list):
            inner = OrtValue(self._value[0]).data_type() if self._value else "tensor(undefined)"
            return f"seq({inner})"
        return dt.type_string(self._code())

    def _code(self):
        return dt.exotic_code(self._value.dtype) or dt.code_of(self._value.dtype)

    def element_type(self):
        """The ONNX element type code of a tensor (1 for float, ...)."""
        if not self.is_tensor():
            raise RuntimeError(f"element_type() needs a tensor, this OrtValue holds {self.data_type()}")
        return self._code()

    def device_name(self):
        return self._device.type

    def is_tensor(self):
        return hasattr(self._value, "shape") and hasattr(self._value, "dtype")

    def is_sparse_tensor(self):
        from .sparse import SparseTensor
        return isinstance(self._value, SparseTensor)

    def is_tensor_sequence(self):
        return isinstance(self._value, list)

    def has_value(self):
        return self._value is not None

    def tensor_size_in_bytes(self):
        """Bytes of the tensor's data (packed for 4- and 2-bit types; 32 per string, as onnxruntime counts)."""
        if not self.is_tensor():
            raise RuntimeError("tensor_size_in_bytes() needs a tensor")
        count = int(np.prod(self._value.shape, dtype=np.int64))
        return (count * _itemsize_bits(self._code()) + 7) // 8

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
        return f"OrtValue({self.data_type() if self.has_value() else None}, " \
               f"shape={self.shape() if self.is_tensor() or self.is_sparse_tensor() else None}, " \
               f"device={self._device})"


class OrtValueVector(list):
    """A list of OrtValues, as the C API's run_with_ort_values and IO binding return them."""

    def push_back(self, value):
        self.append(value)

    def push_back_batch(self, values, *_):
        self.extend(values)

    def reserve(self, n):
        pass

    def shrink_to_fit(self):
        pass

    def element_type_at(self, index):
        return self[index].element_type()


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
