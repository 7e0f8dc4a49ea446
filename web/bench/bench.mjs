// bench.mjs — owns the in-page side of the browser benchmark: one page runs onnxide (WASM EP and CPU EP, Pyodide in
// the page) and onnxruntime-web's wasm backend (1 thread, local files) on the same model bytes and inputs.
import { PyodideHost } from '../host.mjs';

const DIR = '/home/pyodide/bench';

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function bytesOf(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`Failed to fetch ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

function typed(type, bytes) {
  const buf = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  const T = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array }[type];
  return new T(buf);
}

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

class OrtRunner {
  async open(ort, modelBytes, feeds) {
    this.feeds = feeds;
    const t0 = performance.now();
    this.session = await ort.InferenceSession.create(modelBytes, {
      executionProviders: ['wasm'], graphOptimizationLevel: 'all',
    });
    const createMs = performance.now() - t0;
    const t1 = performance.now();
    this.out = await this.session.run(feeds);
    return { createMs, firstMs: performance.now() - t1 };
  }

  async runOnce(reps = 1) {
    const s = performance.now();
    for (let i = 0; i < reps; i++) this.out = await this.session.run(this.feeds);
    return (performance.now() - s) / reps;
  }

  async close() {
    const outputs = this.session.outputNames.map((n) => ({ name: n, dims: this.out[n].dims,
      data: Float32Array.from(this.out[n].data) }));
    await this.session.release();
    return outputs;
  }
}

/** Round-robin warm runs (one of each per round) so that load from other processes hits all of them alike. */
async function interleave(runners, cfg) {
  const times = Object.fromEntries(Object.keys(runners).map((k) => [k, []]));
  const t0 = performance.now();
  for (let round = 0; round < 30; round++) {
    const el = (performance.now() - t0) / 1000;
    let any = false;
    for (const [k, run] of Object.entries(runners)) {
      const cpu = k === 'cpu';
      const min = cpu ? (cfg.cpuMinRuns ?? 3) : (cfg.minRuns ?? 5);
      const budget = cpu ? (cfg.cpuBudgetS ?? 4) : (cfg.budgetS ?? 4);
      if (times[k].length < min || el < budget) {
        times[k].push(await run());
        any = true;
      }
    }
    if (!any) break;
  }
  return times;
}

/** cfg: {base, models: [{name, model, inputs: [{name, type, dims, file}], inputsURL}], eps, gemm, profile, ...}. */
export async function runBench(cfg, log = console.log) {
  const base = cfg.base;
  const result = { models: [], userAgent: navigator.userAgent, crossOriginIsolated: globalThis.crossOriginIsolated };
  const host = new PyodideHost();
  const boot = await host.init({ assetsURL: `${base}build/web/` });
  result.boot = boot.timings;
  const py = host.pyodide;
  py.FS.mkdirTree(DIR);
  py.FS.writeFile(`${DIR}/bench_pyodide.py`, await bytesOf(`${base}web/bench/bench_pyodide.py`));
  py.runPython(`import sys; sys.path.insert(0, '${DIR}')`);
  const bp = py.pyimport('bench_pyodide');
  result.info = bp.info();
  log(`pyodide ready: ${JSON.stringify(result.info)}`);

  const ort = await import(`${base}build/web/ort/ort.wasm.min.mjs`);
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = `${base}build/web/ort/`;
  ort.env.wasm.proxy = false;
  result.ortVersion = ort.env.versions ? ort.env.versions.web || ort.env.versions.common : '?';

  if (cfg.gemm) {
    result.gemm = bp.gemm(cfg.gemmSizes || [256, 512, 1024], cfg.gemmBudgetS || 1.0).rows;
    log('gemm done');
  }

  for (const m of cfg.models) {
    const entry = { name: m.name, runs: {} };
    result.models.push(entry);
    try {
      const modelBytes = await bytesOf(m.model);
      const mpath = `${DIR}/${m.name}.onnx`;
      py.FS.writeFile(mpath, modelBytes);
      const feeds = {};
      for (const inp of m.inputs) {
        const bytes = await bytesOf(`${m.inputsURL}${inp.file}`);
        py.FS.writeFile(`${DIR}/${inp.file}`, bytes);
        feeds[inp.name] = new ort.Tensor(inp.type, typed(inp.type, bytes), inp.dims);
      }
      const spec = JSON.stringify(m.inputs);
      const runners = {};
      for (const ep of cfg.eps) {
        try {
          entry.runs[ep] = bp.open_session(`${m.name}:${ep}`, mpath, spec, DIR, ep);
          runners[ep] = true;
        } catch (e) {
          entry.runs[ep] = { error: String(e.message || e).split('\n').slice(-3).join(' ') };
        }
      }
      const ortRunner = new OrtRunner();
      try {
        entry.runs.ort = await ortRunner.open(ort, modelBytes, feeds);
        runners.ort = true;
      } catch (e) {
        entry.runs.ort = { error: String(e.message || e) };
      }
      // one sample = `reps` back-to-back runs, enough for ~5 ms: the page's clock ticks in 0.1 ms steps when it is
      // not cross-origin isolated, too coarse for one run of a small model
      const reps = runners.ort ? Math.max(1, Math.min(200, Math.ceil(5 / Math.max(0.01, await ortRunner.runOnce(3)))))
        : 1;
      entry.repsPerSample = reps;
      for (const ep of cfg.eps) if (runners[ep]) runners[ep] = async () => bp.run_once(`${m.name}:${ep}`, reps);
      if (runners.ort) runners.ort = () => ortRunner.runOnce(reps);
      const times = await interleave(runners, cfg);
      for (const [k, ts] of Object.entries(times)) Object.assign(entry.runs[k], { times: ts, medianMs: median(ts) });
      for (const ep of cfg.eps) {
        if (!runners[ep]) continue;
        const r = bp.close_session(`${m.name}:${ep}`, !!cfg.profile && ep === 'wasm');
        r.outputs = r.outputs.map((o) => ({ name: o.name, dims: o.dims,
          data: new Float32Array(o.data.buffer, o.data.byteOffset, o.data.byteLength / 4) }));
        Object.assign(entry.runs[ep], r);
      }
      if (runners.ort) entry.runs.ort.outputs = await ortRunner.close();
      log(`${m.name}: ` + Object.entries(entry.runs).map(([k, r]) => `${k} ${r.medianMs ?? r.error}`).join(', '));
      py.FS.unlink(mpath);
      const ref = entry.runs.ort.outputs;
      for (const ep of cfg.eps) {
        const r = entry.runs[ep];
        if (r.outputs && ref) {
          r.maxAbsDiff = ref.map((o, i) => maxAbsDiff(r.outputs[i].data, o.data));
          r.maxAbs = ref.map((o) => o.data.reduce((a, v) => Math.max(a, Math.abs(v)), 0));
        }
      }
    } catch (e) {
      entry.error = String(e.message || e);
    }
    for (const r of Object.values(entry.runs)) delete r.outputs;  // keep the result small
  }
  return result;
}
