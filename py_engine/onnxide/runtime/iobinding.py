"""IOBinding: a run's inputs and outputs bound ahead, kept or made on their devices."""
import ctypes

import numpy as np

from ..errors import InvalidArgument
from .ortvalue import OrtDevice, OrtValue, _element_dtype, as_device


def _host_array(element_type, shape, buffer_ptr):
    """A numpy array over host memory at `buffer_ptr` (no copy)."""
    dtype = _element_dtype(element_type)
    shape = tuple(int(d) for d in shape)
    count = int(np.prod(shape, dtype=np.int64))
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(int(buffer_ptr))
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)


class IOBinding:
    """Inputs stay where they are bound, outputs are made (or read back) where they are bound, and `get_outputs()`
    hands them over as OrtValues there. Devices are named as onnxruntime's Python API names them (`'cuda', 0`) or
    given as an OrtDevice (its C API's form)."""

    def __init__(self, session):
        self._session = session
        self._inputs, self._outputs, self._results = {}, {}, None

    @property
    def _iobinding(self):
        return self

    # --- inputs ------------------------------------------------------------------------------------------------
    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = np.asarray(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape=None, buffer_ptr=None):
        """An input in memory at `buffer_ptr` (host memory only: a device's raw address means nothing here). The C
        API's form `bind_input(name, ort_device, element_type, shape, buffer_ptr)` is taken too."""
        if isinstance(device_type, OrtDevice):
            device, (element_type, shape, buffer_ptr) = device_type._runtime(), (device_id, element_type, shape)
        else:
            device = as_device(device_type, device_id)
        if not device.is_host:
            raise InvalidArgument(f"bind_input '{name}': a raw {device} address cannot be bound; bind an OrtValue "
                                  f"made on that device (bind_ortvalue_input)")
        self._inputs[name] = _host_array(element_type, shape, buffer_ptr)

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = ortvalue

    def clear_binding_inputs(self):
        self._inputs.clear()

    # --- outputs -----------------------------------------------------------------------------------------------
    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Make output `name` on that device, or write it into host memory at `buffer_ptr`. The C API's form
        `bind_output(name, ort_device[, element_type, shape, buffer_ptr])` is taken too."""
        if isinstance(device_type, OrtDevice):
            device = device_type._runtime()
            if element_type is not None:  # (name, device, element_type, shape, buffer_ptr): one place further left
                element_type, shape, buffer_ptr = device_id, element_type, shape
        else:
            device = as_device(device_type, device_id)
        if buffer_ptr is None:
            self._outputs[name] = device
            return
        if not device.is_host:
            raise InvalidArgument(f"bind_output '{name}': a raw {device} address cannot be bound; bind an OrtValue "
                                  f"made on that device (bind_ortvalue_output)")
        self._outputs[name] = OrtValue(_host_array(element_type, shape, buffer_ptr))

    def bind_ortvalue_output(self, name, ortvalue):
        """Write output `name` into `ortvalue` (on its device)."""
        self._outputs[name] = ortvalue

    def clear_binding_outputs(self):
        self._outputs.clear()

    def synchronize_inputs(self):
        pass

    def synchronize_outputs(self):
        pass

    # --- running -----------------------------------------------------------------------------------------------
    def _run(self, run_options=None):
        session = self._session
        names = list(self._outputs) or [o.name for o in session.get_outputs()]
        where = {}
        for name, target in self._outputs.items():
            where[name] = target.device if isinstance(target, OrtValue) else target
        values = session._run(names, self._inputs, where, run_options)
        self._results = []
        for name, v in zip(names, values):
            target = self._outputs.get(name)
            device = where.get(name)
            if isinstance(target, OrtValue):
                _write_into(target, v)
                self._results.append(target)
            else:
                self._results.append(OrtValue(v, device))

    def get_outputs(self):
        return list(self._results or [])

    def get_outputs_as_ortvaluevector(self):
        from .ortvalue import OrtValueVector
        return OrtValueVector(self.get_outputs())

    def copy_outputs_to_cpu(self):
        return [v.numpy() for v in self._results or []]


def _write_into(target, value):
    """Put a run's output into a bound OrtValue: copied into a host array (same shape), or replacing the device
    value (the old buffer released)."""
    if target.device.is_host:
        if target._value is None or tuple(target._value.shape) != tuple(value.shape):
            target._value = value
        else:
            np.copyto(target._value, value)
        return
    old, target._value = target._value, value
    if old is not None:
        target.device.release(old)
