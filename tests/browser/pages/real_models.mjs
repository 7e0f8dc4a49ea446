// tests/browser/pages/real_models.mjs — runs one real model through onnxide's JS API (window.ort) for
// tests/browser/test_real_models.py: feeds read from one binary file, recurrent state carried as Tensors, every output
// returned as base64 of its raw bytes (so Python compares exact float32 values, not JSON-rounded numbers).

const TYPED = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};

function b64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function encode(t) {
  if (t.type === 'string') return { type: t.type, dims: t.dims, strings: Array.from(t.data) };
  const d = t.data;
  return { type: t.type, dims: t.dims, b64: b64(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)) };
}

/**
 * spec: {model: URL, data: URL of the feeds' bytes, fetches: [names] | null, level, eps, runs: [{feeds: {name: {type,
 * dims, offset, length}}, carry: {inputName: outputName of the previous run}}]}.
 * Returns {inputNames, outputNames, createMs, runMs: [...], runs: [{outputName: {type, dims, b64}}]}.
 */
export async function runModel(ort, spec) {
  const buf = await (await fetch(spec.data)).arrayBuffer();
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(spec.model, { graphOptimizationLevel: spec.level || 'all',
    ...(spec.eps ? { executionProviders: spec.eps } : {}) });
  const res = { inputNames: session.inputNames, outputNames: session.outputNames, providers: session.providers,
                createMs: performance.now() - t0, runMs: [], runs: [] };
  let prev = null;
  try {
    for (const run of spec.runs) {
      const feeds = {};
      for (const [name, f] of Object.entries(run.feeds)) {
        const C = TYPED[f.type];
        // a copy: the bytes of one feed must not alias another's (the worker host structured-clones them)
        const data = new C(buf.slice(f.offset, f.offset + f.length));
        feeds[name] = new ort.Tensor(f.type, data, f.dims);
      }
      for (const [input, output] of Object.entries(run.carry || {})) feeds[input] = prev[output];
      const t1 = performance.now();
      const out = spec.fetches ? await session.run(feeds, spec.fetches) : await session.run(feeds);
      res.runMs.push(performance.now() - t1);
      prev = out;
      const enc = {};
      for (const [k, v] of Object.entries(out)) enc[k] = encode(v);
      res.runs.push(enc);
    }
  } finally {
    await session.release();
  }
  return res;
}

/** Runs `spec` with all outputs requested and returns the rejection message (or 'resolved'). */
export async function runExpectingError(ort, spec) {
  try {
    await runModel(ort, { ...spec, fetches: null });
    return 'resolved';
  } catch (e) {
    return String(e && e.message || e);
  }
}

/** onnxruntime-web (build/web/ort/, when set up) on the same model and feeds: its outputs, or its error message. */
export async function runOrtWeb(base, spec) {
  const ort = await import(`${base}build/web/ort/ort.wasm.min.mjs`);
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmPaths = `${base}build/web/ort/`;
  const bytes = new Uint8Array(await (await fetch(spec.model)).arrayBuffer());
  const buf = await (await fetch(spec.data)).arrayBuffer();
  const session = await ort.InferenceSession.create(bytes);
  const res = { version: ort.env.versions && (ort.env.versions.web || ort.env.versions.common),
                outputNames: session.outputNames };
  const feeds = {};
  for (const [name, f] of Object.entries(spec.runs[0].feeds)) {
    feeds[name] = new ort.Tensor(f.type, new TYPED[f.type](buf.slice(f.offset, f.offset + f.length)), f.dims);
  }
  try {
    const out = await session.run(feeds);
    res.outputs = {};
    for (const [k, v] of Object.entries(out)) {
      res.outputs[k] = v instanceof ort.Tensor ? encode(v) : { notTensor: Object.prototype.toString.call(v),
                                                               json: JSON.stringify(v).slice(0, 300) };
    }
  } catch (e) {
    res.error = String(e && e.message || e);
  }
  try {
    res.fetched = encode((await session.run(feeds, [session.outputNames[0]]))[session.outputNames[0]]);
  } catch (e) {
    res.fetchedError = String(e && e.message || e);
  }
  await session.release();
  return res;
}
