"""IOBinding: a session's inputs and outputs bound ahead of `session.run_with_iobinding(binding)`, on the host or
on a device — inputs stay where they are bound, outputs are made (or read back) where they are bound, and
`get_outputs()` hands them over as OrtValues on those devices."""
import ctypes

import numpy as np

from ..errors import InvalidArgument
from .ortvalue import OrtDevice, OrtValue, _element_dtype


class IOBinding:
    def __init__(self, session):
        self._session = session
        self._inputs, self._outputs, self._results = {}, {}, None

    # --- inputs ------------------------------------------------------------------------------------------------
    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = np.asarray(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """An input in memory at `buffer_ptr` (host memory only: a device's raw address means nothing here)."""
        device = OrtDevice.make(device_type, device_id)._device
        if not device.is_host:
            raise InvalidArgument(f"bind_input '{name}': a raw {device} address cannot be bound; bind an OrtValue "
                                  f"made on that device (bind_ortvalue_input)")
        dtype = _element_dtype(element_type)
        count = int(np.prod(shape, dtype=np.int64))
        raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(int(buffer_ptr))
        self._inputs[name] = np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = ortvalue

    def clear_binding_inputs(self):
        self._inputs.clear()

    # --- outputs -----------------------------------------------------------------------------------------------
    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Make output `name` on that device (host by default)."""
        if buffer_ptr is not None:
            raise InvalidArgument(f"bind_output '{name}': binding a raw buffer is not supported; bind an OrtValue "
                                  f"(bind_ortvalue_output)")
        self._outputs[name] = OrtDevice.make(device_type, device_id)._device

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
