"""The native WebGPU backend: wgpu-py (Vulkan — lavapipe on a machine without a GPU —, Metal, D3D12). A thin,
synchronous layer over the calls the WebGPU device needs; backend_js.py mirrors it over the page's navigator.gpu."""
import numpy as np

_FEATURES = ("shader-f16",)


def available():
    """Why wgpu-py cannot give a device here, or None when it can."""
    try:
        import wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as e:  # noqa: BLE001 - no wgpu, no driver, no adapter
        return f"{type(e).__name__}: {e}"
    return None if adapter is not None else "no WebGPU adapter"


class WgpuBackend:
    is_async = False

    def __init__(self):
        import wgpu
        self.wgpu = wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise RuntimeError("no WebGPU adapter")
        features = [f for f in _FEATURES if f in adapter.features]
        names = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroup-storage-size",
                 "max-compute-invocations-per-workgroup", "max-storage-buffers-per-shader-stage",
                 "max-compute-workgroup-size-x", "max-compute-workgroups-per-dimension")
        limits = {k: adapter.limits[k] for k in names if k in adapter.limits}
        self.device = adapter.request_device_sync(required_features=features, required_limits=limits)
        self.limits = {k: self.device.limits[k] for k in names if k in self.device.limits}
        self.f16 = "shader-f16" in features
        info = adapter.info
        self.description = f"{info.get('device', '')} ({info.get('backend_type', '')})".strip()
        u = wgpu.BufferUsage
        self._storage = u.STORAGE | u.COPY_SRC | u.COPY_DST
        self._uniform = u.UNIFORM | u.COPY_DST

    # --- buffers ---------------------------------------------------------------------------------------------------
    def buffer(self, size):
        return self.device.create_buffer(size=size, usage=self._storage)

    def uniform(self, data):
        return self.device.create_buffer_with_data(data=data, usage=self._uniform)

    def write(self, buf, data, offset=0):
        self.device.queue.write_buffer(buf, offset, data)

    def read(self, buf, size, offset=0):
        """The bytes of the buffer (after everything submitted before)."""
        return np.frombuffer(self.device.queue.read_buffer(buf, offset, size), np.uint8)

    @staticmethod
    def destroy(buf):
        buf.destroy()

    # --- programs --------------------------------------------------------------------------------------------------
    def pipeline(self, wgsl, entry="main"):
        module = self.device.create_shader_module(code=wgsl)
        return self.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": entry})

    def bind_group(self, pipeline, buffers):
        """A bind group for group 0: [(buffer, size)] at bindings 0, 1, ..."""
        entries = [{"binding": i, "resource": {"buffer": b, "offset": 0, "size": size}}
                   for i, (b, size) in enumerate(buffers)]
        return self.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)

    def submit(self, commands):
        """Record and submit: ("dispatch", pipeline, bind group, (x, y, z)) and ("copy", src, src offset, dst,
        dst offset, size) in order (consecutive dispatches share one compute pass)."""
        enc = self.device.create_command_encoder()
        cpass = None
        for cmd in commands:
            if cmd[0] == "dispatch":
                if cpass is None:
                    cpass = enc.begin_compute_pass()
                cpass.set_pipeline(cmd[1])
                cpass.set_bind_group(0, cmd[2])
                cpass.dispatch_workgroups(*cmd[3])
            else:
                if cpass is not None:
                    cpass.end()
                    cpass = None
                if cmd[0] == "copy":
                    enc.copy_buffer_to_buffer(cmd[1], cmd[2], cmd[3], cmd[4], cmd[5])
                else:  # ("clear", buffer, size)
                    enc.clear_buffer(cmd[1], 0, cmd[2])
        if cpass is not None:
            cpass.end()
        self.device.queue.submit([enc.finish()])
