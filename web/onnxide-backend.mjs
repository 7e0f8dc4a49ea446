// onnxide-backend.mjs — owns onnxide's backend (what 'cpu', 'wasm' and 'webgpu' resolve to) and its session
// handler: loads the model bytes (URL with progress, external-data files), hands plain data to the Pyodide host and
// reports the host's failures in onnxruntime-web's words ("Can't create a session. ERROR_CODE: 7, ...",
// "failed to call OrtRun(). ERROR_CODE: 2, ERROR_MESSAGE: ..."), and the sessions' JS custom-op kernels (the
// `customOps` option, onnxide's extension): kept here, in the page, and run when the host asks.
import { fetchBytes, isNode } from './assets.mjs';
import { initializeWasmFlags } from './env.mjs';
import { getHost, setKernelCaller } from './host-client.mjs';
import { Tensor, TENSOR_TYPES } from './tensor.mjs';
import { registerBackend } from './backends.mjs';
import { fromWire, toWire } from './wire.mjs';

const LEVELS = ['disabled', 'basic', 'extended', 'layout', 'all'];

function baseURL() {
  return isNode ? `file://${process.cwd()}/` : globalThis.location?.href;
}

/** A host failure as onnxruntime-web words a failed C API call: `${what} ERROR_CODE: n, ERROR_MESSAGE: ...`. */
function ortError(what, e) {
  if (e?.code === undefined || typeof e.code !== 'number') return e;
  return new Error(`${e.what || what} ERROR_CODE: ${e.code}, ERROR_MESSAGE: ${e.message}`);
}

/** Bytes of a model or external-data file named by a URL (relative to `base`), with onnxruntime-web's message. */
async function load(path, base, onProgress) {
  const url = new URL(path, base || baseURL()).href;
  try {
    return { url, bytes: await fetchBytes(url, onProgress && ((l, t) => onProgress(l, t, url))) };
  } catch (e) {
    if (e.httpStatus !== undefined) throw new Error(`failed to load external data file: ${path}`);
    throw e;
  }
}

async function externalFiles(list, modelURL, onProgress) {
  const out = [];
  for (const item of list) {
    const e = typeof item === 'string' ? { path: item, data: item } : item;
    let data = e.data;
    if (typeof data === 'string' || data instanceof URL) data = (await load(String(data), modelURL, onProgress)).bytes;
    else if (typeof Blob !== 'undefined' && data instanceof Blob) data = new Uint8Array(await data.arrayBuffer());
    else if (data instanceof ArrayBuffer) data = new Uint8Array(data);
    if (!(data instanceof Uint8Array)) throw new TypeError(`External data '${e.path}' must be a URL, bytes or a Blob`);
    out.push({ path: e.path, data });
  }
  return out;
}

// an external-data reference is a StringStringEntryProto whose key (field 1, 8 bytes long) is "location"
const LOCATION_KEY = [0x0a, 0x08, ...new TextEncoder().encode('location')];

/** False when `bytes` (a serialized model) cannot name external data: no "location" key anywhere in them. True
 * means the host parses the model to list the files (a weight's raw bytes may hold the pattern by chance). */
export function mayNameExternalData(bytes) {
  const [first, ...rest] = LOCATION_KEY;
  for (let i = bytes.indexOf(first); i >= 0 && i + rest.length < bytes.length; i = bytes.indexOf(first, i + 1)) {
    let k = 0;
    while (k < rest.length && bytes[i + 1 + k] === rest[k]) k++;
    if (k === rest.length) return true;
  }
  return false;
}

const KERNELS = new Map(); // kernelId -> the JS custom-op kernel (a function) of a live session
let nextKernel = 1;
const ATTRIBUTE_TYPES = ['int', 'float', 'string', 'ints', 'floats', 'strings'];

/**
 * The `customOps` option — {domain: {opType: kernel | {kernel, inputs, outputs, attributes}}} — checked, its kernels
 * kept under fresh ids; returns the declarations the host registers ([{domain, opType, kernelId, inputs, outputs,
 * attributes}]). A kernel is (inputs: Tensor[], attributes: object) => Tensor | Tensor[] (or a Promise of it).
 */
function customOpDeclarations(customOps) {
  if (customOps === undefined) return [];
  const where = (d, o) => `customOps['${d}'].${o}`;
  if (typeof customOps !== 'object' || customOps === null || Array.isArray(customOps)) {
    throw new TypeError("'customOps' must be an object {domain: {opType: kernel}}.");
  }
  const decls = [];
  for (const [domain, ops] of Object.entries(customOps)) {
    if (typeof ops !== 'object' || ops === null) throw new TypeError(`customOps['${domain}'] must be an object {opType: kernel}.`);
    for (const [opType, k] of Object.entries(ops)) {
      const spec = typeof k === 'function' ? { kernel: k } : k;
      if (typeof spec?.kernel !== 'function') {
        throw new TypeError(`${where(domain, opType)} must be a function or {kernel: function, inputs, outputs, attributes}.`);
      }
      for (const key of ['inputs', 'outputs']) {
        const types = spec[key];
        if (types === undefined) continue;
        if (!Array.isArray(types) || types.some((t) => !TENSOR_TYPES.includes(t))) {
          throw new TypeError(`${where(domain, opType)}.${key} must be an array of tensor types (${TENSOR_TYPES}).`);
        }
      }
      const attrs = spec.attributes;
      if (attrs !== undefined && (typeof attrs !== 'object' || attrs === null
          || Object.values(attrs).some((t) => !ATTRIBUTE_TYPES.includes(t)))) {
        throw new TypeError(`${where(domain, opType)}.attributes must be an object {name: type} (${ATTRIBUTE_TYPES}).`);
      }
      const kernelId = nextKernel++;
      KERNELS.set(kernelId, spec.kernel);
      decls.push({ domain, opType, kernelId, inputs: spec.inputs, outputs: spec.outputs, attributes: attrs });
    }
  }
  return decls;
}

/** Run a kernel for the host: wire inputs to Tensors, its Tensor(s) back to wire form. */
async function callKernel(kernelId, inputs, attributes) {
  const fn = KERNELS.get(kernelId);
  if (!fn) throw new Error('the JS kernel of this custom op is gone (its session was released)');
  const res = await fn(inputs.map((w) => (w === null || w === undefined ? undefined : fromWire(w))), attributes);
  const list = Array.isArray(res) ? res : [res];
  return list.map((t, i) => {
    const ok = t instanceof Tensor || (typeof t === 'object' && t !== null && 'type' in t && 'data' in t && 'dims' in t);
    if (!ok) {
      const got = t === null ? 'null' : Array.isArray(t) ? 'an array' : typeof t;
      throw new TypeError(`the kernel's output ${i} is ${got}, not a Tensor (it returns a Tensor or an array of Tensors)`);
    }
    return toWire(t instanceof Tensor ? t : new Tensor(t.type, t.data, t.dims), `output ${i}`);
  });
}
setKernelCaller(callKernel);

class OnnxideSessionHandler {
  /** Model (URL string or bytes) and options (executionProviders already resolved to this backend's names). */
  async load(model, options) {
    if (options.graphOptimizationLevel !== undefined && !LEVELS.includes(options.graphOptimizationLevel)) {
      throw new Error(`unsupported graph optimization level: ${options.graphOptimizationLevel}`);
    }
    if (options.executionMode !== undefined && !['sequential', 'parallel'].includes(options.executionMode)) {
      throw new Error(`unsupported execution mode: ${options.executionMode}`);
    }
    const t0 = performance.now();
    const hostP = getHost(); // the host boots while the model downloads
    hostP.catch(() => {});
    const { bytes, url } = typeof model === 'string' ? await load(model, undefined, options.onProgress) : { bytes: model };
    let loadMs = performance.now() - t0;
    // marks (this page's performance.now()): where create() spent its time, for a page's cold-start table
    const marks = { start: t0, modelLoaded: performance.now() };
    const host = await hostP;
    marks.hostReady = performance.now();
    let ext = options.externalData;
    // a model loaded by URL: fetch the external-data files it names, relative to it (the host's parse is skipped
    // where the bytes cannot name any: it posts the model to the Worker and parses it, ~0.1 s for 2 MB in a page)
    if (!ext && url && mayNameExternalData(bytes)) {
      ext = (await host.call('externalLocations', { model: bytes })).map((p) => ({ path: p, data: p }));
    }
    const t1 = performance.now();
    const externalData = await externalFiles(ext || [], url, options.onProgress);
    loadMs += performance.now() - t1;
    const owned = url !== undefined; // bytes we fetched ourselves may be transferred to the Worker
    const transfer = owned && host.mode === 'worker' ? [bytes.buffer, ...externalData.map((e) => e.data.buffer)] : [];
    const customOps = customOpDeclarations(options.customOps);
    marks.createCall = performance.now();
    let meta;
    try {
      meta = await host.call('create', { model: bytes, externalData, options: {
        executionProviders: [...(options.executionProviders || [])].map((e) => (typeof e === 'string' ? e : e.name)),
        graphOptimizationLevel: options.graphOptimizationLevel,
        preferredOutputLocation: options.preferredOutputLocation,
        customOps,
      } }, transfer);
    } catch (e) {
      for (const d of customOps) KERNELS.delete(d.kernelId);
      throw ortError("Can't create a session.", e);
    }
    this.kernelIds = customOps.map((d) => d.kernelId);
    this.host = host;
    this.id = meta.id;
    this.inputMetadata = meta.inputMetadata;
    this.outputMetadata = meta.outputMetadata;
    this.inputNames = meta.inputMetadata.map((m) => m.name);
    this.outputNames = meta.outputMetadata.map((m) => m.name);
    this.providers = meta.providers;
    marks.created = performance.now();
    // loadMs: downloads; createMs: the engine's own InferenceSession creation (Python)
    this.timings = { createMs: meta.createMs, loadMs, marks, lastRun: undefined };
    this.released = false;
    return this;
  }

  async run(feeds, fetches) {
    if (this.released) throw new Error(`cannot run inference. invalid session id: ${this.id}`);
    const wire = {};
    for (const [name, t] of Object.entries(feeds)) {
      if (!this.inputNames.includes(name)) throw new Error(`invalid input '${name}'`);
      wire[name] = toWire(t, `input "${name}"`);
      if (wire[name].gpuBuffer && this.host.mode === 'worker') {
        throw new Error(`input '${name}': a GPUBuffer cannot be sent to the Worker host; use env.onnxide.host = `
          + "'page' to feed GPU buffers created on env.webgpu.device");
      }
    }
    const names = Object.keys(fetches);
    for (const name of names) if (!this.outputNames.includes(name)) throw new Error(`invalid output '${name}'`);
    const t0 = performance.now();
    let res;
    try {
      res = await this.host.call('run', { id: this.id, feeds: wire, fetches: names });
    } catch (e) {
      throw ortError('failed to call OrtRun().', e);
    }
    const out = {};
    for (const [name, w] of Object.entries(res.outputs)) out[name] = into(name, fetches[name], fromWire(w, this.host));
    this.timings.lastRun = { ...res.timings, totalMs: performance.now() - t0 };
    return out;
  }

  async dispose() {
    if (this.released) throw new Error(`cannot release session. invalid session id: ${this.id}`);
    this.released = true;
    for (const id of this.kernelIds) KERNELS.delete(id);
    await this.host.call('release', { id: this.id });
  }
}

const FIX = 'Please fix either the inputs/outputs or the model.';
const TYPE_STRINGS = { float32: 'float', float64: 'double' };

/** A run's output, written into the caller's pre-allocated CPU tensor where one was given for it (onnxruntime's
 * checks and texts when the tensor cannot hold it). */
function into(name, target, t) {
  if (!(target instanceof Tensor) || target.location !== 'cpu' || t.location !== 'cpu') return t;
  const fail = (m) => new Error(`failed to call OrtRun(). ERROR_CODE: 2, ERROR_MESSAGE: ${m}`);
  if (target.type !== t.type) {
    const ts = (x) => `tensor(${TYPE_STRINGS[x] || x})`;
    throw fail(`Unexpected output data type. Actual: (${ts(target.type)}) , expected: (${ts(t.type)})`);
  }
  if (target.dims.length !== t.dims.length) {
    throw fail(`Invalid rank for output: ${name} Got: ${target.dims.length} Expected: ${t.dims.length} ${FIX}`);
  }
  const bad = t.dims.map((d, i) => [i, target.dims[i], d]).filter(([, g, d]) => g !== d);
  if (bad.length) {
    const lines = bad.map(([i, g, d]) => `\n index: ${i} Got: ${g} Expected: ${d}`).join('');
    throw fail(`Got invalid dimensions for output: ${name} for the following indices${lines}\n ${FIX}`);
  }
  target.data.set(t.data);
  return target;
}

/** onnxide's backend: 'cpu' / 'wasm' start the host (without waiting: the model downloads meanwhile), 'webgpu' also
 * a GPUDevice in it; onnxide's own provider names ('CPUExecutionProvider', ...) must be among the host's. */
export const onnxideBackend = {
  async init(name) {
    initializeWasmFlags();
    if (name === 'cpu' || name === 'wasm') {
      getHost().catch(() => {});
      return;
    }
    const host = await getHost();
    if (name === 'webgpu') {
      await host.call('initWebGpu');
      return;
    }
    const providers = await host.call('providers');
    if (!providers.includes(name)) {
      throw new Error(`execution provider '${name}' is not available in this onnxide build (${providers})`);
    }
  },
  async createInferenceSessionHandler(model, options) {
    return new OnnxideSessionHandler().load(model, options);
  },
};

/** Register onnxide's backend as onnxruntime-web registers its own: 'cpu' and 'wasm' (priority 10), 'webgpu' (5)
 * where the entry point has it, and onnxide's provider names (-1: used only when named). */
export function registerOnnxide({ webgpu }) {
  registerBackend('cpu', onnxideBackend, 10);
  registerBackend('wasm', onnxideBackend, 10);
  const full = ['CPUExecutionProvider', 'WasmExecutionProvider'];
  if (webgpu) {
    registerBackend('webgpu', onnxideBackend, 5);
    full.push('WebGpuExecutionProvider');
  }
  for (const name of full) registerBackend(name, onnxideBackend, -1);
}
