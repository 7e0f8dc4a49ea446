// host.mjs — owns the Pyodide host: boots Pyodide from the self-contained build/web/pyodide folder, installs the
// onnxide wheel, imports web/bridge.py, and serves init/create/run/release on plain data. The same object runs in
// the Web Worker (worker.mjs), in the page, or in Node.js; it never touches the DOM.
import { fetchBytes, fetchText, forPyodide, resolveAssets } from './assets.mjs';
import { gunzip, writeTar } from './site_tar.mjs';

const BRIDGE = 'onnxide_web_bridge';
const WASM_DIR = '/home/pyodide/onnxide_wasm';

/** `bytes` when they are laid out as a Pyodide memory snapshot (a header giving where the heap starts, then a heap of
 * whole 64 KiB wasm pages); else an error. Pyodide sizes the module's memory from the snapshot before it checks the
 * header, and a file that is not one (a truncated download) would leave loadPyodide waiting forever. */
function wholeSnapshot(bytes) {
  const heapAt = bytes.length >= 64 ? new DataView(bytes.buffer, bytes.byteOffset, 8).getUint32(4, true) : 0;
  if (heapAt < 48 || heapAt >= bytes.length || (bytes.length - heapAt) % 65536) {
    throw new Error(`not a Pyodide memory snapshot (${bytes.length} bytes)`);
  }
  return bytes;
}

const fetchAll = (urls) => Promise.all(urls.map(async (url) => [url.split('/').pop(), await fetchBytes(url)]));

/** {pyodide, boot} with numpy and onnxide installed (not imported) from resolved `assets`: boot 'snapshot' — the
 * interpreter restored from a memory snapshot taken after start-up (.ci/pyodide_snapshot.mjs) and site-packages
 * (numpy, its bytecode, onnxide) written from one archive, both downloading meanwhile — or 'plain' when the assets
 * have no snapshot, extra `packages` are asked for, or the restore fails. onLoadPyodide: called once pyodide.mjs is
 * in. (The host's boot; web/bench/cold.mjs times it alone as the floor under any Pyodide page.) */
export async function bootPyodide(assets, { packages = [], stdio = {}, log = () => {}, onLoadPyodide } = {}) {
  const indexURL = await forPyodide(assets.indexURL);
  const { loadPyodide } = await import(new URL('pyodide.mjs', assets.indexURL).href);
  onLoadPyodide?.();
  let pyodide = null;
  let boot = 'plain';
  if (assets.snapshotURL && assets.sitePackagesURL && !packages.length) {
    const snapshot = fetchBytes(assets.snapshotURL).then(gunzip).then(wholeSnapshot);
    const site = fetchBytes(assets.sitePackagesURL).then(gunzip);
    snapshot.catch(() => {});  // (a failed download or restore is caught below: the plain boot)
    site.catch(() => {});
    try {
      pyodide = await loadPyodide({ indexURL, ...stdio, _loadSnapshot: snapshot });
      const folder = pyodide.runPython('import site; site.getsitepackages()[0]');
      writeTar(pyodide.FS, await site, folder);
      // only site-packages' finder forgets its listing: importlib.invalidate_caches() would also make each of the
      // snapshot's ~20 zipimporters re-read the standard library's zip directory in Python (~0.7 s, measured at
      // the time)
      pyodide.runPython(`import sys; sys.path_importer_cache.pop(${JSON.stringify(folder)}, None)`);
      boot = 'snapshot';
    } catch (e) {
      log(`onnxide: booting Pyodide without its snapshot (${e.message})`);
      pyodide = null;
    }
  }
  if (!pyodide) {
    // numpy's bytecode downloads while Pyodide boots; numpy and the onnxide wheel download and unpack meanwhile
    // (loadPyodide's `packages`); a package that fails to load is reported on stderr, not by a rejection
    const bytecode = fetchAll(assets.bytecodeURLs);
    bytecode.catch(() => {});
    const wheel = await forPyodide(assets.wheelURL);
    pyodide = await loadPyodide({ indexURL, ...stdio, packages: ['numpy', wheel, ...packages] });
    // pycs beside numpy's modules (checked-hash: used only where they match the source), so it is not compiled
    const pycs = await bytecode;
    if (pycs.length) {
      const folder = pyodide.runPython('import site; site.getsitepackages()[0]');
      for (const [, zip] of pycs) pyodide.unpackArchive(zip, 'zip', { extractDir: folder });
    }
  }
  return { pyodide, boot };
}

function unwrap(proxy) {
  // bridge functions return a JS object already (to_js); errors come back as {error, code}
  if (proxy && proxy.error !== undefined) {
    throw Object.assign(new Error(proxy.error), { code: proxy.code, what: proxy.what });
  }
  return proxy;
}

const METHODS = new Set(['externalLocations', 'initWebGpu', 'providers', 'create', 'run', 'downloadValue',
  'releaseValue', 'release']);

export class PyodideHost {
  constructor() {
    this.pyodide = null;
    this.bridge = null;
    this.booting = null;
    // (kernelId, wire inputs, attributes) => Promise<wire outputs>: runs a JS custom-op kernel where it lives (the
    // page); worker.mjs and host-client.mjs's LocalHost set it
    this.callKernel = null;
  }

  /** Boot once; resolves to {pyodideVersion, onnxide, numpy, providers, timings}. config: {assetsURL, or assets
   * (resolveAssets' result, when the caller has it: no second manifest fetch), packages, onLog}. */
  init(config = {}) {
    if (!this.booting) this.booting = this._boot(config);
    return this.booting;
  }

  async _boot({ assetsURL, assets: resolved, packages = [], onLog } = {}) {
    // marks: wall-clock times (performance.timeOrigin + now(), ms) so that the page can place the Worker's steps on
    // its own timeline (demo.mjs's cold-start table)
    const mark = () => performance.timeOrigin + performance.now();
    const marks = { start: mark() };
    const t0 = performance.now();
    const assets = resolved || await resolveAssets(assetsURL);
    // the WASM EP's kernel modules and bridge.py download while Pyodide boots
    const kernels = fetchAll(assets.wasmKernelURLs);
    kernels.catch(() => {});
    const bridgeSource = fetchText(new URL('./bridge.py', import.meta.url));
    bridgeSource.catch(() => {});
    const log = onLog || (() => {});
    let errors = []; // stderr while booting (a package that failed to load), for the import error below
    const stdio = { stdout: log, stderr: (m) => { errors?.push(m); log(m); } };
    const { pyodide, boot } = await bootPyodide(assets, { packages, stdio, log,
      onLoadPyodide: () => { marks.loadPyodide = mark(); } });
    const t1 = performance.now();
    marks.pyodide = mark();
    // the WASM EP's kernels: into Pyodide's file system, found through ONNXIDE_WASM_DIR at import
    const files = await kernels;
    if (files.length) {
      pyodide.FS.mkdirTree(WASM_DIR);
      for (const [name, bytes] of files) pyodide.FS.writeFile(`${WASM_DIR}/${name}`, bytes);
      pyodide.runPython(`import os; os.environ['ONNXIDE_WASM_DIR'] = '${WASM_DIR}'`);
    }
    const t2 = performance.now();
    marks.kernels = mark();
    // loadPyodide does not reject on a missing package file: a real import tells.
    try {
      pyodide.runPython('import numpy');
      marks.numpy = mark();
      pyodide.runPython('import onnxide');
    } catch (e) {
      throw new Error(`onnxide could not be imported in Pyodide (${errors.join('; ') || e.message})`);
    }
    errors = null;
    const t3 = performance.now();
    marks.onnxide = mark();
    const src = await bridgeSource;
    pyodide.FS.mkdirTree('/home/pyodide/onnxide_web');
    pyodide.FS.writeFile(`/home/pyodide/onnxide_web/${BRIDGE}.py`, src);
    pyodide.runPython(`import sys; sys.path.insert(0, '/home/pyodide/onnxide_web')`);
    this.bridge = pyodide.pyimport(BRIDGE);
    this.pyodide = pyodide;
    const info = unwrap(this.bridge.info());
    const t4 = performance.now();
    marks.bridge = mark();
    return {
      pyodideVersion: pyodide.version, ...info,
      // boot: 'snapshot' or 'plain'; pyodideMs: Pyodide's boot with numpy, its bytecode and onnxide installed;
      // packagesMs: the WASM kernels into its file system; importMs: `import numpy, onnxide`; bridgeMs: bridge.py
      timings: { boot, pyodideMs: t1 - t0, packagesMs: t2 - t1, importMs: t3 - t2,
        numpyMs: marks.numpy - marks.kernels, onnxideMs: marks.onnxide - marks.numpy, bridgeMs: t4 - t3,
        totalMs: t4 - t0, marks },
    };
  }

  /** Serve one request (init aside): the page's LocalHost and worker.mjs both come through here. */
  call(method, args) {
    if (!METHODS.has(method)) throw new Error(`Unknown host method: ${method}`);
    return this[method](args);
  }

  /** External-data file names a model refers to. */
  externalLocations({ model }) {
    return unwrap(this.bridge.external_locations(model)).locations;
  }

  /** Execution providers onnxide has here now (a provider registered after boot too). */
  providers() {
    return unwrap(this.bridge.info()).providers;
  }

  /** The 'webgpu' backend's start: a GPUDevice for the WebGPU EP, or onnxruntime-web's reason why there is none. */
  async initWebGpu() {
    if (!globalThis.navigator?.gpu) throw new Error('WebGPU is not supported in current environment');
    if (!(await this.ensureWebGpu())) {
      throw new Error('Failed to get GPU adapter. You may need to enable flag "--enable-unsafe-webgpu" if you are '
        + 'using Chrome.');
    }
    return { providers: unwrap(this.bridge.info()).providers };
  }

  /** The page's (or the Worker's) GPUDevice handed to Python once, when a session first asks for 'webgpu'. */
  async ensureWebGpu() {
    if (this.webgpu === undefined) {
      this.webgpu = null;
      const gpu = globalThis.navigator?.gpu;
      const adapter = gpu ? await gpu.requestAdapter() : null;
      if (adapter) {
        const f16 = adapter.features.has('shader-f16');
        const limits = {};
        for (const k of ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize',
          'maxComputeInvocationsPerWorkgroup', 'maxStorageBuffersPerShaderStage', 'maxComputeWorkgroupSizeX',
          'maxComputeWorkgroupsPerDimension']) limits[k] = adapter.limits[k];
        const device = await adapter.requestDevice({ requiredFeatures: f16 ? ['shader-f16'] : [], requiredLimits: limits });
        const info = adapter.info || {};
        unwrap(this.bridge.init_webgpu(device, f16, limits, `${info.vendor || ''} ${info.architecture || ''}`.trim()));
        this.webgpu = device;
      }
    }
    return this.webgpu;
  }

  /** {id, inputMetadata, outputMetadata, providers, createMs} for model bytes + [{path, data: Uint8Array}];
   * options.customOps: [{domain, opType, kernelId, inputs, outputs, attributes}] run through this.callKernel. */
  async create({ model, externalData = [], options = {} }) {
    const eps = (options.executionProviders || ['wasm']).map((e) => (typeof e === 'string' ? e : e.name));
    if (eps.includes('webgpu')) await this.ensureWebGpu();
    const opts = {
      // onnxruntime-web's default backend is 'wasm' (here: the WASM EP, with the CPU EP for the rest)
      executionProviders: (options.executionProviders || ['wasm']).map((e) => (typeof e === 'string' ? e : e.name)),
      graphOptimizationLevel: options.graphOptimizationLevel || 'all',
      preferredOutputLocation: options.preferredOutputLocation,
      customOps: options.customOps || [],
    };
    return unwrap(this.bridge.create(model, externalData, opts, (kernelId, inputs, attributes) => {
      if (!this.callKernel) throw new Error('this host cannot call JS custom-op kernels');
      return this.callKernel(kernelId, inputs, attributes);
    }));
  }

  /**
   * {outputs: {name: {type, dims, data: ArrayBuffer|string[]} | {type, dims, location, valueId}}, timings} for
   * feeds {name: {type, dims, data} | {valueId}} (a value a run left on the session's device). Awaits the session's
   * async run: a GPU EP's kernels and readbacks are awaited there.
   */
  async run({ id, feeds, fetches }) {
    const list = Object.entries(feeds).map(([name, f]) => ({ name, ...f }));
    const t0 = performance.now();
    const res = unwrap(await this.bridge.run(id, list, fetches && fetches.length ? fetches : null));
    const outputs = {};
    for (const o of res.outputs) {
      outputs[o.name] = o.valueId !== undefined
        ? { type: o.type, dims: o.dims, location: o.location, valueId: o.valueId,
          gpuBuffer: this.bridge.gpu_buffer(o.valueId) ?? undefined }
        : { type: o.type, dims: o.dims, data: o.type === 'string' ? o.data : o.data.buffer };
    }
    return { outputs, timings: { ...res.timings, hostMs: performance.now() - t0 } };
  }

  /** {type, dims, data} of a value a run left on a device (Tensor.getData). */
  async downloadValue({ valueId }) {
    const w = unwrap(await this.bridge.download_value(valueId));
    return { type: w.type, dims: w.dims, data: w.type === 'string' ? w.data : w.data.buffer };
  }

  /** Give such a value back to its device (Tensor.dispose). */
  releaseValue({ valueId }) {
    return unwrap(this.bridge.release_value(valueId));
  }

  release({ id }) {
    return unwrap(this.bridge.release(id));
  }
}
