// cold.mjs — owns the cold-start page's logic: the same steps for onnxide and onnxruntime-web (?engine=onnxide|ort):
// import the engine's ESM entry, InferenceSession.create(silero_vad.onnx URL, wasm EP), run the synthetic clip
// chunk by chunk; publishes window.coldStart = {engine, totalMs, parts, overlapped, segments, warmMedianMs}.
// ?engine=pyodide is the floor under any page built on Pyodide: the host's own boot (web/host.mjs, memory snapshot
// and all) and `import numpy`, in the page, then nothing of onnxide.
// onnxruntime-web is npm's build served from build/web/ort/ (1 thread: the page is not cross-origin isolated).
import { synthSpeech } from '../demo/synth.mjs';
import { runVad, segments } from '../demo/vad.mjs';
import { coldStartSplit } from '../demo/coldstart.mjs';

const engine = new URLSearchParams(location.search).get('engine') || 'onnxide';
const modelURL = new URL('../../build/web/models/silero_vad.onnx', import.meta.url).href;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };

/** Navigation -> numpy imported through the host's boot, in parts. */
async function pyodideFloor() {
  const { defaultAssetsURL, resolveAssets } = await import('../assets.mjs');
  const { bootPyodide } = await import('../host.mjs');
  const pageReady = performance.now();
  const assets = await resolveAssets(defaultAssetsURL());
  let pyodideIn;
  const { pyodide, boot } = await bootPyodide(assets, { onLoadPyodide: () => { pyodideIn = performance.now(); } });
  const booted = performance.now();
  pyodide.runPython('import numpy');
  const numpyIn = performance.now();
  return { engine, totalMs: numpyIn, overlapped: [], segments: null, warmMedianMs: null, version: pyodide.version,
    parts: [
      { part: 'page and JS modules', ms: pageReady },
      { part: 'assets manifest, pyodide.mjs', ms: pyodideIn - pageReady },
      { part: `Pyodide boot (${boot})`, ms: booted - pyodideIn },
      { part: 'import numpy', ms: numpyIn - booted }] };
}

async function main() {
  if (engine === 'pyodide') return pyodideFloor();
  const ort = engine === 'ort'
    ? await import('../../build/web/ort/ort.wasm.min.mjs')
    : await import('../onnxide-web.mjs');
  if (engine === 'ort') ort.env.wasm.wasmPaths = new URL('../../build/web/ort/', import.meta.url).href;
  const pageReady = performance.now();
  const session = await ort.InferenceSession.create(modelURL, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const created = performance.now();
  let firstAt = null;
  const { probs, runMs } = await runVad(ort, session, synthSpeech(6), (i) => { if (i === 0) firstAt = performance.now(); });
  let split;
  if (engine === 'ort') {
    split = { totalMs: firstAt, overlapped: [], parts: [
      { part: 'page and JS modules', ms: pageReady },
      { part: 'session creation (wasm download + compile, model download, session)', ms: created - pageReady },
      { part: 'first result (first run, page work)', ms: firstAt - created }] };
  } else {
    split = coldStartSplit((await ort.getHost()).info.timings, session.timings, pageReady, firstAt);
  }
  return { engine, ...split, segments: segments(probs), warmMedianMs: median(runMs.slice(1)),
    version: engine === 'ort' ? ort.env.versions.web : ort.env.versions.onnxide };
}

main().then((r) => { window.coldStart = r; }, (e) => { window.coldStart = { engine, error: String(e.message || e) }; })
  .finally(() => { document.getElementById('out').textContent = JSON.stringify(window.coldStart, null, 1); });
