// conf-worker.mjs — a Worker running plain Pyodide + the onnxide wheel + tests/browser/page_runner.py; answers
// {init}, {batch: url}, {case: i}. Kept in a Worker so the page can time a case out and terminate it.
let runner = null;

async function init(base, ep) {
  const manifest = await (await fetch(new URL('build/web/manifest.json', base))).json();
  const web = new URL('build/web/', base);
  const indexURL = new URL(manifest.indexURL, web).href;
  const { loadPyodide } = await import(indexURL + 'pyodide.mjs');
  const py = await loadPyodide({ indexURL });
  await py.loadPackage(['numpy', new URL(manifest.wheel, web).href]);
  if (ep === 'WasmExecutionProvider') {  // the WASM EP's kernel modules, found through ONNXIDE_WASM_DIR
    py.FS.mkdirTree('/home/pyodide/onnxide_wasm');
    for (const k of manifest.wasmKernels || []) {
      const bytes = new Uint8Array(await (await fetch(new URL(k, web))).arrayBuffer());
      py.FS.writeFile(`/home/pyodide/onnxide_wasm/${k.split('/').pop()}`, bytes);
    }
    py.runPython("import os; os.environ['ONNXIDE_WASM_DIR'] = '/home/pyodide/onnxide_wasm'");
  }
  py.FS.mkdirTree('/home/pyodide/conf');
  for (const f of ['casecodec.py', 'page_runner.py']) {
    py.FS.writeFile(`/home/pyodide/conf/${f}`, await (await fetch(new URL(`tests/browser/${f}`, base))).text());
  }
  py.runPython("import sys; sys.path.insert(0, '/home/pyodide/conf'); import numpy, onnxide");
  if (ep === 'WebGpuExecutionProvider' && globalThis.navigator?.gpu) {  // the Worker's GPUDevice for the WebGPU EP
    const adapter = await navigator.gpu.requestAdapter();
    if (adapter) {
      const f16 = adapter.features.has('shader-f16');
      const limits = { maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
        maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
        maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize };
      const device = await adapter.requestDevice({ requiredFeatures: f16 ? ['shader-f16'] : [], requiredLimits: limits });
      py.pyimport('onnxide.eps.webgpu').init_page(device, f16, limits, 'navigator.gpu (Worker)');
    }
  }
  runner = py.pyimport('page_runner');
  if (ep && ep !== 'CPUExecutionProvider') runner.set_provider(ep);
}

self.onmessage = async ({ data }) => {
  try {
    if (data.init) {
      const t = performance.now();
      await init(data.init, data.ep);
      self.postMessage({ ok: performance.now() - t });
    } else if (data.batch) {
      const blob = new Uint8Array(await (await fetch(data.batch)).arrayBuffer());
      self.postMessage({ ok: runner.load_batch(blob) });
    } else if (data.case !== undefined) {
      self.postMessage({ ok: await runner.run_case(data.case) });
    }
  } catch (e) {
    self.postMessage({ error: String(e.message || e) });
  }
};
