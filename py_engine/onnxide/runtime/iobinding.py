"""OrtValue and IOBinding: values that carry their device, bound to a session's inputs/outputs like ORT's."""
import numpy as np

from .. import dtypes as dt
from ..errors import InvalidArgument


class OrtValue:
    """A tensor (or sequence/map) with the device it lives on; CPU values wrap numpy arrays without copying."""

    def __init__(self, value, device_type="cpu", device_id=0):
        self._value, self._device = value, (device_type.lower(), int(device_id))

    @classmethod
    def ortvalue_from_numpy(cls, array, device_type="cpu", device_id=0):
        return cls(np.asarray(array), device_type, device_id)

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape, element_type=np.float32, device_type="cpu", device_id=0):
        return cls(np.empty(shape, dtype=element_type), device_type, device_id)

    def numpy(self):
        return self._value

    def shape(self):
        return list(self._value.shape)

    def data_type(self):
        return dt.type_string(dt.code_of(self._value.dtype))

    def element_type(self):
        return self._value.dtype.type

    def device_name(self):
        return self._device[0]

    def is_tensor(self):
        return isinstance(self._value, np.ndarray)

    def has_value(self):
        return self._value is not None

    def data_ptr(self):
        return self._value.ctypes.data

    def update_inplace(self, array):
        np.copyto(self._value, np.asarray(array))


class IOBinding:
    """Inputs and outputs bound ahead of `session.run_with_iobinding(binding)`."""

    def __init__(self, session):
        self._session = session
        self._inputs, self._outputs, self._results = {}, {}, None

    def bind_cpu_input(self, name, array):
        self._inputs[name] = np.asarray(array)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        raise InvalidArgument(f"bind_input with a raw buffer pointer is not supported for '{name}': "
                              f"use bind_cpu_input or bind_ortvalue_input")

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = ortvalue.numpy()

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        self._outputs[name] = None

    def bind_ortvalue_output(self, name, ortvalue):
        self._outputs[name] = ortvalue

    def clear_binding_inputs(self):
        self._inputs.clear()

    def clear_binding_outputs(self):
        self._outputs.clear()

    def synchronize_inputs(self):
        pass

    def synchronize_outputs(self):
        pass

    def _run(self, run_options=None):
        names = list(self._outputs) or [o.name for o in self._session.get_outputs()]
        values = self._session.run(names, self._inputs, run_options)
        self._results = []
        for name, v in zip(names, values):
            target = self._outputs.get(name)
            if target is not None:
                target.update_inplace(v)
                self._results.append(target)
            else:
                self._results.append(OrtValue(v))

    def get_outputs(self):
        return list(self._results or [])

    def copy_outputs_to_cpu(self):
        return [v.numpy() for v in self._results or []]
