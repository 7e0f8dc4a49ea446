"""MockDeviceExecutionProvider: a test-only GPU-like EP whose tensors are opaque handles over numpy, for proving
the device-resident core (plan-time placement, transfers, releases, awaitable bodies) without a GPU.

- A `Handle` exposes shape / dtype / ndim / size only: any host read of its data (numpy conversion, indexing,
  iteration, truth value) raises `HostAccess`; only `MockDevice.download` reads it.
- Its kernels are the numpy kernels run "on the device": each checks that the executor handed it handles for data
  inputs, host values for the op's host inputs and only metadata for meta inputs, and that each handle has the
  element type the plan promised; results become new handles.
- It counts uploads (run time), constant placements, downloads, shares, releases and live buffers; releasing a
  handle twice or using a released one raises.
- `MockDevice(asynchronous=True)` makes kernels and downloads return awaitables, like WebGPU in the page.

Register with `install()`; `MOCK` is the provider name, `mock_device()` the (shared) device; `Audit` checks a
session's transfer bounds around its runs.
"""
import numpy as np

from onnxide import dtypes as dt
from onnxide.ops import registry
from onnxide.partition.spec import SEQUENCE, type_entry
from onnxide.runtime.devices import Device, get_device, register_device
from onnxide.runtime.providers import ExecutionProvider, register_provider

MOCK = "MockDeviceExecutionProvider"
CONTROL_FLOW = {"If": 1, "Loop": 1, "Scan": 9}  # the bodies' ops run from these kernels; Scan 8 stays on the host


class HostAccess(AssertionError):
    """The host touched a device value's data without a transfer."""


class _Buffer:
    __slots__ = ("array", "refs")

    def __init__(self, array):
        self.array, self.refs = array, 1


class Meta:
    """What a kernel may read of a meta input: the value's shape and dtype (any data access raises)."""

    __slots__ = ("shape", "dtype")
    denied = "a kernel read the data of a meta input (only its shape and dtype are promised)"

    def __init__(self, value):
        self.shape, self.dtype = tuple(value.shape), value.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def _deny(self, *args, **kwargs):
        raise HostAccess(self.denied)

    __array__ = __len__ = __iter__ = __getitem__ = __bool__ = __float__ = __int__ = __index__ = _deny
    __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = _deny


class Handle(Meta):
    """A device tensor: metadata only, its data read by its device."""

    __slots__ = ("_buf", "device", "released")
    __array_priority__ = 1e9
    denied = "host access to a device tensor without a transfer"

    def __init__(self, buf, device):
        super().__init__(buf.array)
        self._buf, self.device, self.released = buf, device, False

    def __repr__(self):
        return f"Handle({self.shape}, {self.dtype}{', released' if self.released else ''})"


class _Later:
    """An awaitable that is already done (an asynchronous device's result); `close()` drops a result nobody will
    await (a synchronous run refusing it) and releases its device values."""

    def __init__(self, device, value):
        self.device, self.value = device, value

    def __await__(self):
        if False:  # pragma: no cover - makes this a generator
            yield
        return self.value

    def close(self):
        for v in self.value if isinstance(self.value, tuple) else (self.value,):
            if isinstance(v, Handle) and not v.released:
                self.device.release(v)


class MockDevice(Device):
    type = "mock"

    def __init__(self, device_id=0, asynchronous=False):
        self.id, self.asynchronous = device_id, asynchronous
        self.array_ops = _ArrayOps(self)
        self.reset()

    def reset(self):
        self.uploads = self.constants = self.downloads = self.allocations = self.shares = self.releases = 0
        self.constant_bytes = 0
        self.live = {}  # id(buffer) -> buffer

    # --- memory ------------------------------------------------------------------------------------------------
    def _new(self, array):
        if not isinstance(array, np.ndarray):
            raise HostAccess(f"the mock device holds tensors only, not {type(array).__name__}")
        buf = _Buffer(np.array(array, copy=True))
        buf.array.flags.writeable = False
        self.live[id(buf)] = buf
        self.allocations += 1
        return Handle(buf, self)

    def _later(self, value):
        return _Later(self, value) if self.asynchronous else value

    def upload(self, array):
        if isinstance(array, Handle):
            raise HostAccess("upload of a value that is already on a device")
        self.uploads += 1
        return self._new(np.asarray(array))

    def place_constant(self, array):
        self.constants += 1
        self.constant_bytes += np.asarray(array).nbytes
        return self._new(np.asarray(array))

    def download(self, value):
        self.downloads += 1
        return self._later(np.array(self.read(value), copy=True))

    def read(self, h):
        """The handle's array, for device-side compute (the mock's kernels)."""
        if not isinstance(h, Handle) or h.device is not self:
            raise HostAccess(f"expected a value of {self}, got {type(h).__name__}")
        if h.released:
            raise HostAccess(f"use of a released device value {h}")
        return h._buf.array

    def release(self, value):
        self.read(value)
        value.released = True
        self.releases += 1
        buf = value._buf
        buf.refs -= 1
        if buf.refs == 0:
            self.live.pop(id(buf), None)  # (a buffer from before a reset is not counted)

    def share(self, value):
        self.read(value)
        value._buf.refs += 1
        self.shares += 1
        return Handle(value._buf, self)

    def owns(self, value):
        return isinstance(value, Handle) and value.device is self

    def live_buffers(self):
        return len(self.live)

    # --- kernels -----------------------------------------------------------------------------------------------
    def wrap(self, result):
        if isinstance(result, (tuple, list)) and not isinstance(result, np.ndarray):
            if isinstance(result, list):
                raise HostAccess("a device kernel returned a sequence")
            return tuple(self.wrap(r) for r in result)
        if result is None:
            return None
        if isinstance(result, np.generic):
            result = np.asarray(result)
        return self._new(result)


class _ArrayOps:
    """take / stack / zeros for control-flow kernels placed on the mock device (device-side compute)."""

    def __init__(self, device):
        self.d = device

    def take(self, x, axis, index):
        a = self.d.read(x)
        return self.d._new(a[(slice(None),) * axis + (index, Ellipsis)])

    def stack(self, values, axis):
        return self.d._new(np.stack([self.d.read(v) for v in values], axis=axis))

    def zeros(self, shape, dtype):
        return self.d._new(np.zeros(shape, dtype=dtype))


def _declines(spec):
    """Why the mock leaves a node to the host (None: it claims it)."""
    node, opdef = spec.node, spec.opdef
    domain = registry.normalize_domain(node.domain)
    if domain not in ("", registry.MS_DOMAIN):
        return "domain"
    if not spec.tensor_inputs() or any(t == dt.STRING for t in spec.input_types):
        return "input types"
    if any(t is not None and not isinstance(t, int) for t in spec.output_types):
        return "output types"
    if opdef.kernel.__module__.endswith(".sequence"):  # sequences and optionals: the mock has tensor kernels only
        return "sequence op"
    present = [i for i, x in enumerate(node.inputs) if x]
    if present and all(i in opdef.meta_inputs for i in present):
        return "metadata only"
    if spec.has_subgraphs():
        since = CONTROL_FLOW.get(node.op_type) if domain == "" else None
        if since is None or opdef.since < since:
            return "subgraphs"
        for body in (g for v in node.attrs.values() for g in (v if isinstance(v, list) else [v])
                     if hasattr(g, "nodes")):
            if any(isinstance(type_entry(o.type) and type_entry(o.type)[0], str) for o in body.outputs):
                return "body outputs"  # sequences, optionals
    return None


class MockDeviceExecutionProvider(ExecutionProvider):
    name = MOCK

    def __init__(self, options=None):
        super().__init__(options)
        self.device = get_device("mock", int(self.options.get("device_id", 0)))

    def claim(self, spec):
        if _declines(spec) is not None:
            return None
        d, opdef, types = self.device, spec.opdef, list(spec.input_types)
        host, meta, fn = opdef.host_inputs, opdef.meta_inputs, opdef.kernel

        def check(args):
            xs = []
            for i, a in enumerate(args):
                if a is None:
                    xs.append(None)
                elif i in meta:
                    xs.append(Meta(a))
                elif i in host:
                    if isinstance(a, Handle):
                        raise HostAccess(f"{spec.op_type} input {i} is a host input, got a device value")
                    xs.append(a)
                else:
                    arr = d.read(a)
                    want = types[i] if i < len(types) else None
                    if want is not None and arr.dtype.names is None and dt.code_of(arr.dtype) != want and \
                            not dt.is_exotic(want):
                        raise HostAccess(f"{spec.op_type} input {i}: planned {dt.type_string(want)}, got {arr.dtype}")
                    xs.append(arr)
            return xs

        if spec.has_subgraphs():  # the control-flow kernel itself: it reaches values only through ctx
            def control(*args, **kwargs):
                for i, a in enumerate(args):
                    if a is not None and i not in host and i not in meta:
                        d.read(a)
                    elif a is not None and i in host and isinstance(a, Handle):
                        raise HostAccess(f"{spec.op_type} input {i} is a host input, got a device value")
                return fn(*args, **kwargs)
            return control

        def kernel(*args, **kwargs):
            return d._later(d.wrap(fn(*check(args), **kwargs)))
        return kernel


class Audit:
    """The transfer bounds of a session on the mock device: weights placed at creation and never again, nothing
    alive after a run but the weights (outputs come back to the host and their device copies go)."""

    def __init__(self, device):
        self.d = device
        self.placed = self.live = None

    def created(self):
        self.placed, self.live = self.d.constants, self.d.live_buffers()
        assert self.live == self.placed, f"{self.live} buffers alive after creation, {self.placed} weights placed"

    def ran(self):
        assert self.d.constants == self.placed, f"weights placed during a run ({self.d.constants - self.placed})"
        assert self.d.live_buffers() == self.live, \
            f"{self.d.live_buffers() - self.live} device buffers left alive by a run"


def mock_device(device_id=0):
    return get_device("mock", device_id)


def install(asynchronous=False):
    """Register the mock device type and provider (idempotent); returns the device, counters reset."""
    register_device("mock", lambda device_id: MockDevice(device_id))
    register_provider(MockDeviceExecutionProvider)
    d = mock_device()
    d.asynchronous = asynchronous
    d.reset()
    return d


__all__ = ["MOCK", "HostAccess", "Handle", "MockDevice", "MockDeviceExecutionProvider", "install", "mock_device",
           "SEQUENCE"]
