"""The WebGPU Device (runtime/devices.py's contract over a backend: wgpu-py natively, navigator.gpu in the page):
tensors as GPU buffers, a buffer pool fed by the plan's releases, uploads / downloads, and kernel dispatches
recorded into one command stream that is submitted when something must see its results."""
import numpy as np

from ...errors import EPFail, Fail, InvalidArgument
from ...runtime.devices import Device
from . import programs

# numpy dtype -> (WGSL storage element, bytes per element on the device); bool is stored as u32, int64 as two i32
STORAGE = {np.dtype(np.float32): ("f32", 4), np.dtype(np.float16): ("f16", 2), np.dtype(np.int32): ("i32", 4),
           np.dtype(np.uint32): ("u32", 4), np.dtype(np.int64): ("i64", 8), np.dtype(np.bool_): ("bool", 4)}
# error flag codes kernels raise -> (error class, message), reported at the next readback
ERRORS = {1: (InvalidArgument, "Gather: an index is out of range for its axis (reported by the WebGPU device at the "
                               "next readback)"),
          2: (Fail, "Integer division by zero (reported by the WebGPU device at the next readback)")}
POOL_BYTES = 256 << 20  # free buffers kept for reuse; beyond this they are destroyed
_ALIGN = 256


class _Buffer:
    __slots__ = ("gpu", "size", "refs", "external")

    def __init__(self, gpu, size, external=False):
        self.gpu, self.size, self.refs, self.external = gpu, size, 1, external


class GpuTensor:
    """A tensor on a WebGPU device: metadata on the host, data in `buf` (shared by views such as Reshape's)."""

    __slots__ = ("buf", "shape", "dtype", "device")

    def __init__(self, buf, shape, dtype, device):
        self.buf, self.shape, self.dtype, self.device = buf, tuple(int(d) for d in shape), np.dtype(dtype), device

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self.size * STORAGE[self.dtype][1]

    def __repr__(self):
        return f"GpuTensor({self.shape}, {self.dtype})"


def _bucket(n):
    """Pool size class of an n-byte request (fewer distinct sizes, more reuse; at most 1/8 wasted)."""
    n = max(n, 16)
    if n <= 4096:
        return -(-n // _ALIGN) * _ALIGN
    step = 1 << max(n.bit_length() - 4, 8)
    return -(-n // step) * step


class WebGpuDevice(Device):
    type = "webgpu"

    def __init__(self, backend, device_id=0):
        self.backend, self.id = backend, device_id
        self.f16 = backend.f16
        self.limits = backend.limits
        self._free, self._free_bytes, self._doomed = {}, 0, []
        self._commands = []
        self._pipelines, self._uniforms = {}, {}
        self.array_ops = _ArrayOps(self)
        self.dispatches = self.submits = 0
        self._errors, self._errors_pending = None, False  # a u32 kernels raise (atomicMax) on bad data

    def __repr__(self):
        return f"webgpu:{self.id}"

    # --- memory ----------------------------------------------------------------------------------------------------
    def alloc(self, shape, dtype):
        """A new (uninitialized) tensor."""
        dtype = np.dtype(dtype)
        size = 1
        for d in shape:
            size *= int(d)
        need = _bucket(size * STORAGE[dtype][1])
        limit = self.limits.get("max-storage-buffer-binding-size", 1 << 27)
        if need > limit:
            raise EPFail(f"A {tuple(shape)} {dtype} tensor ({need} bytes) exceeds this WebGPU device's binding limit "
                         f"({limit} bytes)")
        free = self._free.get(need)
        if free:
            gpu = free.pop()
            self._free_bytes -= need
        else:
            gpu = self.backend.buffer(need)
        return GpuTensor(_Buffer(gpu, need), shape, dtype, self)

    def adopt(self, gpu_buffer, shape, dtype):
        """A tensor over a buffer someone else owns (a page's GPUBuffer fed to a run): never pooled or destroyed
        here."""
        dtype = np.dtype(dtype)
        if dtype not in STORAGE:
            raise InvalidArgument(f"A GPU buffer of {dtype} cannot be read by the WebGPU EP")
        t = GpuTensor(_Buffer(gpu_buffer, int(gpu_buffer.size), external=True), shape, dtype, self)
        if t.nbytes > t.buf.size:
            raise InvalidArgument(f"The GPU buffer ({t.buf.size} bytes) is smaller than a {t.shape} {dtype} tensor")
        return t

    def owns(self, value):
        return type(value) is GpuTensor and value.device is self

    def share(self, value):
        value.buf.refs += 1
        return GpuTensor(value.buf, value.shape, value.dtype, self)

    def view(self, value, shape):
        """`value`'s buffer under another shape (Reshape and its kin: no copy); the caller owns the view."""
        return GpuTensor(self.share(value).buf, shape, value.dtype, self)

    def release(self, value):
        buf = value.buf
        buf.refs -= 1
        if buf.refs or buf.external:
            return
        if self._free_bytes + buf.size > POOL_BYTES:
            self._doomed.append(buf.gpu)  # destroyed once the commands using it are submitted
            return
        self._free.setdefault(buf.size, []).append(buf.gpu)
        self._free_bytes += buf.size

    def upload(self, array):
        a = np.asarray(array, order="C")  # (not ascontiguousarray: it makes a 0-d array 1-d)
        if a.dtype not in STORAGE:
            raise EPFail(f"The WebGPU device holds {sorted(str(d) for d in STORAGE)} tensors, not {a.dtype}")
        t = self.alloc(a.shape, a.dtype)
        data = a.astype(np.uint32) if a.dtype == np.bool_ else a
        raw = data.reshape(-1).view(np.uint8)
        if raw.size:
            if raw.size % 4:
                raw = np.concatenate([raw, np.zeros(4 - raw.size % 4, np.uint8)])
            self.flush()  # (a queue write runs before commands recorded but not yet submitted)
            self.backend.write(t.buf.gpu, raw)
        return t

    def download(self, value):
        """A host copy of `value`; a kernel's error flag raised since the last readback is reported here."""
        self.flush()
        n = value.nbytes
        raw = self.backend.read(value.buf.gpu, -(-n // 4) * 4) if n else np.zeros(0, np.uint8)
        flag = None
        if self._errors_pending:
            self._errors_pending = False
            flag = self.backend.read(self._errors, 16)
        if self.backend.is_async:
            return self._finish_download(raw, flag, value.shape, value.dtype, n)
        self._raise_flagged(flag)
        return _host_array(raw, value.shape, value.dtype, n)

    async def _finish_download(self, pending, flag, shape, dtype, n):
        raw = await pending if n else pending
        self._raise_flagged(await flag if flag is not None else None)
        return _host_array(raw, shape, dtype, n)

    def _raise_flagged(self, flag):
        code = int(np.asarray(flag, np.uint8)[:4].view(np.uint32)[0]) if flag is not None else 0
        if code:
            self.backend.write(self._errors, np.zeros(4, np.uint32).view(np.uint8))
            cls, message = ERRORS.get(code, (EPFail, f"a WebGPU kernel reported error {code}"))
            raise cls(message)

    def from_external(self, obj):
        return None

    # --- kernels ---------------------------------------------------------------------------------------------------
    def pipeline(self, key, make_wgsl):
        """The compiled pipeline for `key` (a kernel family and its parameters), compiled once from make_wgsl()."""
        p = self._pipelines.get(key)
        if p is None:
            wgsl = make_wgsl()
            try:
                p = self.backend.pipeline(wgsl)
            except Exception as e:  # a shader the backend rejects: a bug of ours, reported with the source
                raise EPFail(f"WebGPU shader {key[0]} failed to compile: {e}\n{wgsl}") from None
            self._pipelines[key] = p
        return p

    def dispatch(self, key, make_wgsl, inputs, outputs, meta, invocations, checked=False):
        """Record one kernel run over `invocations` threads (of programs.WORKGROUP each workgroup): bindings are
        `inputs`, then `outputs` (GpuTensors), then (`checked`) the error flag, then the meta uniform (u32
        words)."""
        if invocations <= 0:
            return
        storage = len(inputs) + len(outputs) + bool(checked)
        if storage > self.limits.get("max-storage-buffers-per-shader-stage", 8):
            raise EPFail(f"WebGPU kernel {key[0]} binds {storage} storage buffers; this device allows "
                         f"{self.limits.get('max-storage-buffers-per-shader-stage', 8)}")
        pipeline = self.pipeline(key, make_wgsl)
        buffers = [(t.buf.gpu, max(16, -(-t.nbytes // 4) * 4)) for t in list(inputs) + list(outputs)]
        if checked:
            if self._errors is None:
                self._errors = self.backend.buffer(16)
                self.backend.write(self._errors, np.zeros(4, np.uint32).view(np.uint8))
            buffers.append((self._errors, 16))
            self._errors_pending = True
        buffers.append(self._meta(meta))
        group = self.backend.bind_group(pipeline, buffers)
        self._commands.append(("dispatch", pipeline, group, programs.workgroups(invocations)))
        self.dispatches += 1
        if len(self._commands) >= 256:
            self.flush()

    def copy(self, src, src_offset, dst, dst_offset, nbytes):
        if nbytes:
            self._commands.append(("copy", src.buf.gpu, src_offset, dst.buf.gpu, dst_offset, nbytes))

    def zeros(self, shape, dtype):
        t = self.alloc(shape, dtype)
        self._commands.append(("clear", t.buf.gpu, t.buf.size))
        return t

    def _meta(self, words):
        if len(words) > programs.META_WORDS:
            raise EPFail(f"A WebGPU kernel's parameters ({len(words)} words) exceed the meta uniform")
        data = np.zeros(programs.META_WORDS, np.uint32)
        data[:len(words)] = np.asarray(words, np.int64).astype(np.uint32)
        key = data.tobytes()
        buf = self._uniforms.get(key)
        if buf is None:
            if len(self._uniforms) > 8192:
                self.flush()
                self._uniforms.clear()
            buf = self._uniforms[key] = self.backend.uniform(key)
        return buf, len(key)

    def flush(self):
        """Submit what was recorded (kernels see their inputs' final contents in order)."""
        if self._commands:
            commands, self._commands = self._commands, []
            self.backend.submit(commands)
            self.submits += 1
        if self._doomed:
            for gpu in self._doomed:
                self.backend.destroy(gpu)
            self._doomed = []


def _host_array(raw, shape, dtype, n):
    raw = np.asarray(raw, np.uint8)[:n]
    if dtype == np.bool_:
        return raw.view(np.uint32).astype(np.bool_).reshape(shape)
    return raw.view(dtype).reshape(shape).copy()


class _ArrayOps:
    """take / stack / zeros for If / Loop / Scan placed on the device (copies between buffers)."""

    def __init__(self, device):
        self.d = device

    def take(self, x, axis, index):
        shape = x.shape[:axis] + x.shape[axis + 1:]
        out = self.d.alloc(shape, x.dtype)
        item = STORAGE[x.dtype][1]
        outer, inner = int(np.prod(x.shape[:axis], dtype=np.int64)), int(np.prod(x.shape[axis + 1:], dtype=np.int64))
        if axis == 0 or outer == 1:
            self.d.copy(x, index * inner * item, out, 0, inner * item)
        else:
            from .ops_data import strided_copy
            strided_copy(self.d, x, out, axis, index)
        return out

    def stack(self, values, axis):
        from .ops_data import concat
        views = [self.d.view(v, v.shape[:axis] + (1,) + v.shape[axis:]) for v in values]
        try:
            return concat(self.d, views, axis)
        finally:
            for v in views:
                self.d.release(v)

    def zeros(self, shape, dtype):
        return self.d.zeros(shape, dtype)
