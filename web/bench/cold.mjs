// cold.mjs — owns the cold-start page's logic: the same steps for onnxide and onnxruntime-web (?engine=onnxide|ort):
// import the engine's ESM entry, InferenceSession.create(silero_vad.onnx URL, wasm EP), run the synthetic clip
// chunk by chunk; publishes window.coldStart = {engine, totalMs, parts, overlapped, segments, warmMedianMs}.
// onnxruntime-web is npm's build served from build/web/ort/ (1 thread: the page is not cross-origin isolated).
import { synthSpeech } from '../demo/synth.mjs';
import { runVad, segments } from '../demo/vad.mjs';
import { coldStartSplit } from '../demo/coldstart.mjs';

const engine = new URLSearchParams(location.search).get('engine') || 'onnxide';
const modelURL = new URL('../../build/web/models/silero_vad.onnx', import.meta.url).href;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };

async function main() {
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
