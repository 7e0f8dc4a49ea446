"""The in-page WebGPU backend: the page's navigator.gpu device (requested by the JS host, web/host.mjs), driven from
Pyodide with the calls backend_wgpu.py makes through wgpu-py; readbacks return awaitables (mapAsync), which the
executor's async driver awaits. The browser reports shader and validation errors asynchronously: an error scope
around the work between two readbacks turns any of them into an EPFail at the readback, never a silent result."""
import numpy as np

from ...errors import EPFail

# WebGPU's camelCase limit names -> the ones device.py reads (wgpu-py's)
LIMITS = {"maxStorageBufferBindingSize": "max-storage-buffer-binding-size", "maxBufferSize": "max-buffer-size",
          "maxComputeWorkgroupStorageSize": "max-compute-workgroup-storage-size",
          "maxComputeInvocationsPerWorkgroup": "max-compute-invocations-per-workgroup",
          "maxStorageBuffersPerShaderStage": "max-storage-buffers-per-shader-stage",
          "maxComputeWorkgroupSizeX": "max-compute-workgroup-size-x",
          "maxComputeWorkgroupsPerDimension": "max-compute-workgroups-per-dimension"}


class JsBackend:
    is_async = True

    def __init__(self, device, f16, limits, description=""):
        import js
        from pyodide.ffi import to_js
        self.js, self.device = js, device
        self._obj = lambda d: to_js(d, dict_converter=js.Object.fromEntries)
        self._list = to_js
        self.f16 = bool(f16)
        limits = limits.to_py() if hasattr(limits, "to_py") else dict(limits or {})
        self.limits = {LIMITS[k]: int(v) for k, v in limits.items() if k in LIMITS}
        self.description = str(description or "navigator.gpu")
        u = js.GPUBufferUsage
        self._storage = u.STORAGE | u.COPY_SRC | u.COPY_DST
        self._uniform = u.UNIFORM | u.COPY_DST
        self._staging = u.MAP_READ | u.COPY_DST
        self._scoped = False

    def _watch(self):
        if not self._scoped:
            self.device.pushErrorScope("validation")
            self._scoped = True

    # --- buffers ---------------------------------------------------------------------------------------------------
    def buffer(self, size):
        return self.device.createBuffer(self._obj({"size": size, "usage": self._storage}))

    def uniform(self, data):
        buf = self.device.createBuffer(self._obj({"size": len(data), "usage": self._uniform}))
        self.write(buf, np.frombuffer(data, np.uint8))
        return buf

    def write(self, buf, data, offset=0):
        data = np.ascontiguousarray(data, np.uint8).reshape(-1)
        u8 = self.js.Uint8Array.new(data.size)
        u8.assign(data)
        self.device.queue.writeBuffer(buf, offset, u8)

    async def read(self, buf, size, offset=0):
        """The bytes of the buffer after everything submitted before (copied to a staging buffer, mapped)."""
        scoped, self._scoped = self._scoped, False
        error = await self.device.popErrorScope() if scoped else None
        if error is not None:
            raise EPFail(f"WebGPU: {str(error.message).splitlines()[0]}")
        staging = self.device.createBuffer(self._obj({"size": size, "usage": self._staging}))
        enc = self.device.createCommandEncoder()
        enc.copyBufferToBuffer(buf, offset, staging, 0, size)
        self.device.queue.submit(self._list([enc.finish()]))
        await staging.mapAsync(self.js.GPUMapMode.READ)
        out = np.empty(size, np.uint8)
        self.js.Uint8Array.new(staging.getMappedRange()).assign_to(out)
        staging.unmap()
        staging.destroy()
        return out

    @staticmethod
    def destroy(buf):
        buf.destroy()

    # --- programs --------------------------------------------------------------------------------------------------
    def pipeline(self, wgsl, entry="main"):
        self._watch()
        module = self.device.createShaderModule(self._obj({"code": wgsl}))
        return self.device.createComputePipeline(self._obj({"layout": "auto",
                                                            "compute": {"module": module, "entryPoint": entry}}))

    def bind_group(self, pipeline, buffers):
        entries = [{"binding": i, "resource": {"buffer": b, "offset": 0, "size": size}}
                   for i, (b, size) in enumerate(buffers)]
        return self.device.createBindGroup(self._obj({"layout": pipeline.getBindGroupLayout(0), "entries": entries}))

    def submit(self, commands):
        self._watch()
        enc = self.device.createCommandEncoder()
        cpass = None
        for cmd in commands:
            if cmd[0] == "dispatch":
                if cpass is None:
                    cpass = enc.beginComputePass()
                cpass.setPipeline(cmd[1])
                cpass.setBindGroup(0, cmd[2])
                cpass.dispatchWorkgroups(*cmd[3])
            else:
                if cpass is not None:
                    cpass.end()
                    cpass = None
                if cmd[0] == "copy":
                    enc.copyBufferToBuffer(cmd[1], cmd[2], cmd[3], cmd[4], cmd[5])
                else:
                    enc.clearBuffer(cmd[1], 0, cmd[2])
        if cpass is not None:
            cpass.end()
        self.device.queue.submit(self._list([enc.finish()]))
