// session.mjs — owns `InferenceSession` with onnxruntime-web's checks and messages: create()'s argument forms, the
// backend its executionProviders resolve to (backends.mjs), run()'s feeds / fetches / options rules; the work itself
// is the backend's session handler (onnxide's: onnxide-backend.mjs).
import { resolveBackend } from './backends.mjs';
import { Tensor } from './tensor.mjs';

/** (model, options) of create()'s forms: (path | Uint8Array[, options]) or (ArrayBuffer[, byteOffset[, byteLength]][, options]). */
function createArgs(a0, a1, a2, a3) {
  const optionsAt = (v) => {
    if (typeof v === 'object' && v !== null) return v;
    if (typeof v !== 'undefined') throw new TypeError("'options' must be an object.");
    return {};
  };
  if (typeof a0 === 'string' || a0 instanceof Uint8Array) return [a0, optionsAt(a1)];
  const isShared = typeof SharedArrayBuffer !== 'undefined' && a0 instanceof SharedArrayBuffer;
  if (!(a0 instanceof ArrayBuffer) && !isShared) throw new TypeError("Unexpected argument[0]: must be 'path' or 'buffer'.");
  if (typeof a1 !== 'number') return [new Uint8Array(a0), optionsAt(a1)];
  const total = a0.byteLength;
  if (!Number.isSafeInteger(a1)) throw new RangeError("'byteOffset' must be an integer.");
  if (a1 < 0 || a1 >= total) throw new RangeError(`'byteOffset' is out of range [0, ${total}).`);
  if (typeof a2 === 'undefined') return [new Uint8Array(a0, a1), {}];
  if (typeof a2 !== 'number') throw new TypeError("'byteLength' must be a number.");
  if (!Number.isSafeInteger(a2)) throw new RangeError("'byteLength' must be an integer.");
  if (a2 <= 0 || a1 + a2 > total) throw new RangeError(`'byteLength' is out of range (0, ${total - a1}].`);
  return [new Uint8Array(a0, a1, a2), optionsAt(a3)];
}

export class InferenceSession {
  constructor(handler) {
    this.handler = handler;
  }

  /**
   * create(url | Uint8Array | ArrayBuffer[, byteOffset, byteLength], options). Options as onnxruntime-web's:
   * executionProviders ('wasm' / 'cpu': onnxide's WASM EP with the CPU EP behind it, 'webgpu'; onnxide's own
   * provider names too), graphOptimizationLevel, externalData, preferredOutputLocation ('cpu' | 'gpu-buffer', or
   * {outputName: location}), plus onnxide's onProgress(loaded, total, url) for model and external-data downloads
   * and customOps ({domain: {opType: kernel}}: JS custom-op kernels, docs/browser.md).
   */
  static async create(a0, a1, a2, a3) {
    const [model, options] = createArgs(a0, a1, a2, a3);
    const [backend, resolved] = await resolveBackend(options);
    return new InferenceSession(await backend.createInferenceSessionHandler(model, resolved));
  }

  get inputNames() {
    return this.handler.inputNames;
  }

  get outputNames() {
    return this.handler.outputNames;
  }

  get inputMetadata() {
    return this.handler.inputMetadata;
  }

  get outputMetadata() {
    return this.handler.outputMetadata;
  }

  /** onnxide's additions: the session's providers in order, and the last create / run timings. */
  get providers() {
    return this.handler.providers;
  }

  get timings() {
    return this.handler.timings;
  }

  /** run(feeds[, fetches][, options]) -> {outputName: Tensor}; fetches: output names, or {name: null | Tensor}. */
  async run(feeds, a1, a2) {
    if (typeof feeds !== 'object' || feeds === null || feeds instanceof Tensor || Array.isArray(feeds)) {
      throw new TypeError("'feeds' must be an object that use input names as keys and OnnxValue as corresponding values.");
    }
    const fetches = {};
    let options = {};
    const optionsAt = (v) => {
      if (typeof v === 'object' && v !== null) return v;
      if (typeof v !== 'undefined') throw new TypeError("'options' must be an object.");
      return {};
    };
    if (typeof a1 === 'object') {
      if (a1 === null) throw new TypeError('Unexpected argument[1]: cannot be null.');
      if (a1 instanceof Tensor) throw new TypeError("'fetches' cannot be a Tensor");
      if (Array.isArray(a1)) {
        if (a1.length === 0) throw new TypeError("'fetches' cannot be an empty array.");
        for (const name of a1) {
          if (typeof name !== 'string') throw new TypeError("'fetches' must be a string array or an object.");
          if (!this.outputNames.includes(name)) throw new RangeError(`'fetches' contains invalid output name: ${name}.`);
          fetches[name] = null;
        }
        options = optionsAt(a2);
      } else {
        // an object naming outputs (null or a Tensor to fill) is fetches; anything else is the run options
        const keys = Object.getOwnPropertyNames(a1);
        for (const name of this.outputNames) {
          const v = a1[name];
          if (keys.includes(name) && (v === null || v instanceof Tensor)) fetches[name] = v;
        }
        options = Object.keys(fetches).length ? optionsAt(a2) : a1;
      }
    } else if (typeof a1 !== 'undefined') {
      throw new TypeError("Unexpected argument[1]: must be 'fetches' or 'options'.");
    }
    for (const name of this.inputNames) {
      if (typeof feeds[name] === 'undefined') throw new Error(`input '${name}' is missing in 'feeds'.`);
    }
    if (!Object.keys(fetches).length) for (const name of this.outputNames) fetches[name] = null;
    const results = await this.handler.run(feeds, fetches, options);
    const out = {};
    for (const [name, r] of Object.entries(results)) out[name] = r instanceof Tensor ? r : new Tensor(r.type, r.data, r.dims);
    return out;
  }

  async release() {
    return this.handler.dispose();
  }

  startProfiling() {
    this.handler.startProfiling?.();
  }

  endProfiling() {
    this.handler.endProfiling?.();
  }
}
