"""Memories values live in: `HOST` (numpy's) and the `Device`s of GPU execution providers — the contract the plan,
the executor, OrtValue and IO binding move tensors through. A leaf module: it imports nothing of onnxide.

A device value is opaque to everything but its Device. The plan moves values only with `upload` / `download`,
places initializers once with `place_constant`, calls `release` at every owned value's last use and `share` where
one buffer gets a second owner (a body output that is its input, a device feed bound twice). Values whose kernels
or readbacks are asynchronous may be awaitables (WebGPU readback in the page); the executor awaits them.
"""
import numpy as np


class Device:
    """One memory. Subclasses for GPU EPs implement the transfer and lifetime methods below."""

    type = "cpu"      # onnxruntime's device type name ('cpu', 'cuda', 'webgpu', ...)
    id = 0
    is_host = False
    array_ops = None  # HostArrayOps-like take / stack / zeros for control-flow nodes placed here (None: none run here)

    def upload(self, array):
        """A device value holding a copy of the numpy `array` (or an awaitable of one)."""
        raise NotImplementedError(f"{self} cannot take values from the host")

    def place_constant(self, array):
        """An initializer's device copy, made once per session (a device may keep constants apart)."""
        return self.upload(array)

    def download(self, value):
        """A numpy copy of the device `value` (or an awaitable of one)."""
        raise NotImplementedError(f"{self} cannot hand values to the host")

    def release(self, value):
        """The owner of `value` is done with it (its buffer may return to a pool)."""

    def share(self, value):
        """A second owned reference to `value`'s buffer (each reference is released once)."""
        return value

    def owns(self, value):
        """Whether `value` is one of this device's values."""
        return False

    def from_external(self, obj):
        """A device value for a foreign tensor on this device (DLPack / __cuda_array_interface__), or None."""
        return None

    def __repr__(self):
        return f"{self.type}:{self.id}"


class HostArrayOps:
    """The array primitives control-flow kernels use on host values (a device offers the same on its own)."""

    @staticmethod
    def take(x, axis, index):
        """x at `index` along `axis` (a view; a 0-d array, never a numpy scalar)."""
        return x[(slice(None),) * axis + (index, Ellipsis)]

    @staticmethod
    def stack(values, axis):
        return np.stack(values, axis=axis)

    @staticmethod
    def zeros(shape, dtype):
        return np.zeros(shape, dtype=dtype)


class _Host(Device):
    type = "cpu"
    is_host = True
    array_ops = HostArrayOps

    def upload(self, array):
        return array

    def download(self, value):
        return value

    def owns(self, value):
        return True


HOST = _Host()

_FACTORIES = {"cpu": lambda device_id: HOST}
_DEVICES = {}


def register_device(device_type, factory):
    """Make `get_device(device_type, id)` answer with `factory(id)` (called once per id): EPs with a device
    register it when their runtime is present."""
    _FACTORIES[device_type.lower()] = factory


def get_device(device_type, device_id=0):
    """The Device of that type and id; a type no EP registered raises ValueError naming it."""
    kind = str(device_type).lower()
    if kind not in _FACTORIES:
        raise ValueError(f"Device type '{device_type}' is not available here (available: {sorted(_FACTORIES)})")
    key = (kind, int(device_id))
    if key not in _DEVICES:
        _DEVICES[key] = _FACTORIES[kind](int(device_id))
    return _DEVICES[key]


def device_types():
    return sorted(_FACTORIES)


def owner_of(value):
    """The registered (non-host) Device that owns `value`, or None."""
    for d in list(_DEVICES.values()):
        if not d.is_host and d.owns(value):
            return d
    return None


def location_of(value, devices):
    """The Device among `devices` that owns `value`, else HOST."""
    for d in devices:
        if d.owns(value):
            return d
    return HOST
