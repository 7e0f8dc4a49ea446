// session.mjs — owns `InferenceSession` (onnxruntime-web's API: create, run, inputNames/outputNames, metadata,
// release): loads the model bytes (URL with progress, external-data files), hands plain data to the host and
// turns the host's outputs back into Tensors.
import { fetchBytes, isNode } from './assets.mjs';
import { getHost } from './host-client.mjs';
import { fromWire, toWire } from './tensor.mjs';

function baseURL() {
  return isNode ? `file://${process.cwd()}/` : globalThis.location?.href;
}

async function modelBytes(arg, byteOffset, byteLength, onProgress) {
  if (typeof arg === 'string' || arg instanceof URL) {
    const url = new URL(arg, baseURL()).href;
    return { bytes: await fetchBytes(url, onProgress && ((l, t) => onProgress(l, t, url))), url, owned: true };
  }
  if (arg instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && arg instanceof SharedArrayBuffer)) {
    return { bytes: new Uint8Array(arg, byteOffset ?? 0, byteLength ?? arg.byteLength - (byteOffset ?? 0)) };
  }
  if (arg instanceof Uint8Array) return { bytes: arg };
  throw new TypeError("Unexpected argument[0]: must be 'path' (a URL string) or 'buffer' (Uint8Array/ArrayBuffer).");
}

async function externalFiles(list, modelURL, onProgress) {
  const out = [];
  for (const item of list) {
    const e = typeof item === 'string' ? { path: item, data: item } : item;
    let data = e.data;
    if (typeof data === 'string' || data instanceof URL) {
      const url = new URL(data, modelURL || baseURL()).href;
      data = await fetchBytes(url, onProgress && ((l, t) => onProgress(l, t, url)));
    } else if (typeof Blob !== 'undefined' && data instanceof Blob) data = new Uint8Array(await data.arrayBuffer());
    else if (data instanceof ArrayBuffer) data = new Uint8Array(data);
    if (!(data instanceof Uint8Array)) throw new TypeError(`External data '${e.path}' must be a URL, bytes or a Blob`);
    out.push({ path: e.path, data });
  }
  return out;
}

export class InferenceSession {
  constructor(host, meta) {
    this.host = host;
    this.id = meta.id;
    this.inputMetadata = meta.inputMetadata;
    this.outputMetadata = meta.outputMetadata;
    this.inputNames = meta.inputMetadata.map((m) => m.name);
    this.outputNames = meta.outputMetadata.map((m) => m.name);
    this.providers = meta.providers;
    this.timings = { createMs: meta.createMs, loadMs: meta.loadMs, lastRun: undefined }; // loadMs: downloads
    this.released = false;
  }

  /**
   * create(url | Uint8Array | ArrayBuffer[, byteOffset, byteLength], options). Options: executionProviders,
   * graphOptimizationLevel ('disabled'|'basic'|'extended'|'all'), externalData ([{path, data}] or [url]),
   * preferredOutputLocation ('cpu' | 'gpu-buffer', or {outputName: location}: 'gpu-buffer' outputs stay on the
   * session's device as Tensors with location 'gpu-buffer'),
   * onProgress(loaded, total, url) (onnxide's addition: model and external-data download progress).
   */
  static async create(arg, a, b, c) {
    const options = (typeof a === 'object' && a !== null ? a : c) || {};
    const [off, len] = typeof a === 'number' ? [a, b] : [undefined, undefined];
    const t0 = performance.now();
    const hostP = getHost(); // boot Pyodide while the model downloads
    hostP.catch(() => {});
    const { bytes, url, owned } = await modelBytes(arg, off, len, options.onProgress);
    let loadMs = performance.now() - t0;
    const host = await hostP;
    let ext = options.externalData;
    if (!ext && url) {
      // a model loaded by URL: fetch the external-data files it names, relative to it
      const locs = await host.call('externalLocations', { model: bytes });
      ext = locs.map((p) => ({ path: p, data: p }));
    }
    const t1 = performance.now();
    const externalData = await externalFiles(ext || [], url, options.onProgress);
    loadMs += performance.now() - t1;
    const transfer = owned ? [bytes.buffer, ...externalData.map((e) => e.data.buffer)] : [];
    const meta = await host.call('create', { model: bytes, externalData, options: {
      executionProviders: options.executionProviders, graphOptimizationLevel: options.graphOptimizationLevel,
      preferredOutputLocation: options.preferredOutputLocation,
    } }, host.mode === 'worker' ? transfer : []);
    return new InferenceSession(host, { ...meta, loadMs });
  }

  /** run(feeds[, fetches][, options]) -> {outputName: Tensor}; fetches: names or {name: null|Tensor}. */
  async run(feeds, fetches, options) {
    if (this.released) throw new Error('Session already released');
    if (typeof feeds !== 'object' || feeds === null || Array.isArray(feeds)) {
      throw new TypeError("'feeds' must be an object that use input names as keys and OnnxValue as corresponding values.");
    }
    let names = null;
    if (Array.isArray(fetches)) names = fetches;
    else if (fetches && typeof fetches === 'object' && !('logSeverityLevel' in fetches || 'tag' in fetches)) {
      const keys = Object.keys(fetches);
      if (keys.length && keys.every((k) => this.outputNames.includes(k))) names = keys;
    }
    if (names) {
      for (const n of names) {
        if (typeof n !== 'string' || !this.outputNames.includes(n)) throw new RangeError(`'fetches' contains invalid output name: ${n}.`);
      }
    }
    const wire = {};
    for (const [k, v] of Object.entries(feeds)) {
      wire[k] = toWire(v);
      if (wire[k].gpuBuffer && this.host.mode === 'worker') {
        throw new Error(`input '${k}': a GPUBuffer cannot be sent to the Worker host; use env.onnxide.host = 'page' `
          + 'to feed GPU buffers created on env.webgpu.device');
      }
    }
    const t0 = performance.now();
    const res = await this.host.call('run', { id: this.id, feeds: wire, fetches: names });
    const out = {};
    for (const [k, v] of Object.entries(res.outputs)) out[k] = fromWire(v, this.host);
    this.timings.lastRun = { ...res.timings, totalMs: performance.now() - t0 };
    return out;
  }

  async release() {
    if (this.released) return;
    this.released = true;
    await this.host.call('release', { id: this.id });
  }

  startProfiling() {}

  endProfiling() {}
}
