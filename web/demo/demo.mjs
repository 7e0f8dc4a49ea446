// demo.mjs — owns the demo page's logic: boot onnxide (Worker by default; ?host=page), load silero VAD with
// progress, run it on the synthetic clip (or a dropped file), draw waveform + speech probability, fill the timing
// table, and publish window.onnxideDemo = {state, result} for web/main_job.py and the browser tests.
import * as ort from '../onnxide-web.mjs';
import { SAMPLE_RATE, SPEECH, synthSpeech } from './synth.mjs';
import { CHUNK, runVad, segments } from './vad.mjs';
import { coldStartSplit } from './coldstart.mjs';

const params = new URLSearchParams(location.search);
const pageReady = performance.now(); // this module runs once the page and its JS modules (onnxide's API) are loaded
const $ = (id) => document.getElementById(id);
const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[s.length >> 1] : NaN; };
const demo = window.onnxideDemo = { state: 'loading', result: null, error: null, runs: [] };

if (params.get('host')) ort.env.onnxide.host = params.get('host');
// one session per EP list: the WASM SIMD kernels (with the CPU EP behind them), the CPU EP alone, then the WebGPU
// kernels where the browser has navigator.gpu; ?ep=webgpu (or wasm, cpu, comma lists) picks one
const epSets = params.get('ep') ? [params.get('ep').split(',')]
  : [['wasm'], ['cpu'], ...(globalThis.navigator?.gpu ? [['webgpu']] : [])];
const modelURL = params.get('model') || new URL('../../build/web/models/silero_vad.onnx', import.meta.url).href;

function fail(e) {
  demo.state = 'error';
  demo.error = String(e.message || e);
  $('segments').textContent = demo.error;
  $('segments').className = 'error';
  document.body.dataset.state = 'error';
}

function draw(audio, probs, segs, truth) {
  const c = $('plot'), g = c.getContext('2d'), W = c.width, H = c.height, top = 18;
  g.clearRect(0, 0, W, H);
  const secs = audio.length / SAMPLE_RATE, x = (s) => (s / secs) * W, h = H - top - 4;
  g.fillStyle = 'rgba(46, 160, 67, 0.18)';
  for (const [a, b] of segs) g.fillRect(x(a), top, x(b) - x(a), h);
  if (truth) {
    g.fillStyle = '#9aa5b1';
    for (const [a, b] of truth) g.fillRect(x(a), 4, x(b) - x(a), 6);
    g.fillStyle = '#555'; g.font = '11px system-ui'; g.fillText('synthesized voice', 4, 12);
  }
  g.strokeStyle = '#8a94a3';
  g.beginPath();
  const per = Math.max(1, Math.floor(audio.length / W));
  for (let px = 0; px < W; px++) {
    let lo = 0, hi = 0;
    for (let i = px * per; i < Math.min(audio.length, (px + 1) * per); i++) { lo = Math.min(lo, audio[i]); hi = Math.max(hi, audio[i]); }
    g.moveTo(px + 0.5, top + h / 2 - hi * h / 2); g.lineTo(px + 0.5, top + h / 2 - lo * h / 2);
  }
  g.stroke();
  if (probs) {
    g.strokeStyle = '#1f6feb'; g.lineWidth = 2; g.beginPath();
    probs.forEach((p, i) => { const px = x((i + 0.5) * CHUNK / SAMPLE_RATE), py = top + h - p * h; i ? g.lineTo(px, py) : g.moveTo(px, py); });
    g.stroke(); g.lineWidth = 1;
    g.fillStyle = '#1f6feb'; g.font = '11px system-ui'; g.fillText('speech probability', W - 120, top + 12);
  }
}

let session = null;

function coldTable(split) {
  const rows = [...split.parts, ...split.overlapped.map((o) => ({ ...o, part: `${o.part} (overlapped)` })),
    { part: 'cold start (navigation -> first result)', ms: split.totalMs }];
  for (const { part, ms } of rows) {
    const tr = document.createElement('tr');
    const label = part === 'session creation' ? `${part} (the engine's own: ${fmtMs(split.engineCreateMs)})` : part;
    for (const c of [label, fmtMs(ms)]) { const td = document.createElement('td'); td.textContent = c; tr.append(td); }
    $('cold-rows').append(tr);
  }
}

async function analyse(audio, label, truth) {
  $('audio-text').textContent = `${label}: ${(audio.length / SAMPLE_RATE).toFixed(2)} s at 16 kHz`;
  draw(audio, null, [], truth);
  demo.state = 'running';
  const t0 = performance.now();
  let firstAt = null;
  const { probs, runMs } = await runVad(ort, session, audio, (i, n) => {
    if (i === 0) firstAt = performance.now();
    if (i % 16 === 0) $('segments').textContent = `running… chunk ${i + 1}/${n}`;
  });
  const clipMs = performance.now() - t0;
  const segs = segments(probs);
  draw(audio, probs, segs, truth);
  $('segments').textContent = segs.length
    ? `Speech at ${segs.map(([a, b]) => `${a.toFixed(2)}–${b.toFixed(2)} s`).join(', ')}`
    : 'No speech detected';
  $('segments').className = 'big';
  return { probs: Array.from(probs, (p) => Math.round(p * 1000) / 1000), segments: segs, runMs, clipMs, firstAt,
    audioSeconds: audio.length / SAMPLE_RATE };
}

function timingRow(boot, r) {
  const tr = document.createElement('tr');
  const cells = [session.providers.map((p) => p.replace('ExecutionProvider', '')).join(' + '), boot.host, fmtMs(boot.pyodideMs), fmtMs(boot.importMs),
    fmtMs(session.timings.createMs), fmtMs(r.runMs[0]), fmtMs(median(r.runMs.slice(1))),
    fmtMs(r.clipMs), `${(r.audioSeconds * 1000 / r.clipMs).toFixed(1)}×`];
  for (const c of cells) { const td = document.createElement('td'); td.textContent = c; tr.append(td); }
  $('timing-rows').append(tr);
}

async function main() {
  document.body.dataset.state = 'loading';
  const hostP = ort.getHost().then((h) => {
    const t = h.info.timings;
    $('boot').value = 1;
    $('boot-text').textContent = `Pyodide ${h.info.pyodideVersion} + onnxide ${h.info.onnxide} ready in ${fmtMs(t.totalMs)} (${h.mode})`;
    return h;
  });
  hostP.catch(() => {});
  const progress = (loaded, total) => {
    $('model').max = total || loaded || 1; $('model').value = loaded;
    $('model-text').textContent = `${(loaded / 1e6).toFixed(2)}${total ? ` / ${(total / 1e6).toFixed(2)}` : ''} MB`;
  };
  const audio = synthSpeech(6);
  const perEP = [];
  let host, boot;
  for (const eps of epSets) {
    const s = await ort.InferenceSession.create(modelURL, {
      executionProviders: eps, graphOptimizationLevel: 'all', onProgress: perEP.length ? undefined : progress,
    });
    if (perEP.some((p) => p.providers.join() === s.providers.join())) { await s.release(); continue; }
    if (session) await session.release();
    session = s;
    if (!host) {
      host = await hostP;
      $('model-text').textContent += ` — session ready (${s.inputNames.join(', ')} → ${s.outputNames.join(', ')})`;
      const t = host.info.timings;
      boot = { host: host.mode, boot: t.boot, pyodideMs: t.pyodideMs, importMs: t.packagesMs + t.importMs,
        totalMs: t.totalMs };
    }
    $('ep-text').textContent = `running on ${s.providers.join(' + ')}`;
    const r = await analyse(audio, 'synthetic clip', SPEECH);
    timingRow(boot, r);
    perEP.push({ providers: s.providers, createMs: s.timings.createMs, loadMs: s.timings.loadMs, timings: s.timings,
      firstRunMs: r.runMs[0],
      warmMedianMs: median(r.runMs.slice(1)), clipMs: r.clipMs, segments: r.segments, firstAt: r.firstAt, r });
  }
  const first = perEP[0], r = first.r;
  const split = coldStartSplit(host.info.timings, first.timings, pageReady, r.firstAt);
  coldTable(split);
  $('cold').textContent = `Cold start (navigation → first VAD result): ${fmtMs(r.firstAt)}; ` +
    `Pyodide's boot (${boot.boot === 'snapshot' ? 'from its memory snapshot, numpy + onnxide written'
      : 'numpy + onnxide wheels installed'} meanwhile) ${fmtMs(boot.pyodideMs)}, WASM kernels and ` +
    `numpy + onnxide import ${fmtMs(boot.importMs)}, model download ${fmtMs(first.loadMs)} (beside the boot), ` +
    `session creation ${fmtMs(first.createMs)}. Warm runs: ${r.runMs.length} chunks of 32 ms audio per execution provider.`;
  demo.result = { ...r, boot, providers: first.providers, coldStartMs: r.firstAt, coldStart: split,
    resultReadyMs: performance.now(),
    createMs: first.createMs, loadMs: first.loadMs, warmMedianMs: first.warmMedianMs, firstRunMs: r.runMs[0],
    host: host.mode, versions: { ...ort.env.versions },
    perEP: perEP.map(({ r: _r, timings: _t, ...rest }) => rest) };
  demo.state = 'done';
  document.body.dataset.state = 'done';
}

async function userAudio(file) {
  try {
    const raw = await new AudioContext().decodeAudioData(await file.arrayBuffer());
    const off = new OfflineAudioContext(1, Math.ceil(raw.duration * SAMPLE_RATE), SAMPLE_RATE);
    const src = off.createBufferSource();
    src.buffer = raw; src.connect(off.destination); src.start();
    const audio = (await off.startRendering()).getChannelData(0);
    const r = await analyse(audio, file.name);
    demo.runs.push(r);
  } catch (e) { fail(e); }
}

async function switchEP(eps) {
  try {
    const s = await ort.InferenceSession.create(modelURL, { executionProviders: eps, graphOptimizationLevel: 'all' });
    if (session) await session.release();
    session = s;
    $('ep-text').textContent = `running on ${s.providers.join(' + ')}`;
    demo.runs.push(await analyse(synthSpeech(6), 'synthetic clip', SPEECH));
  } catch (e) { fail(e); }
}

$('ep').addEventListener('change', (e) => switchEP(e.target.value.split(',')));
$('file').addEventListener('change', (e) => e.target.files[0] && userAudio(e.target.files[0]));
$('synth').addEventListener('click', () => analyse(synthSpeech(6), 'synthetic clip', SPEECH).catch(fail));
document.addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dragging'); });
document.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
document.addEventListener('drop', (e) => {
  e.preventDefault(); document.body.classList.remove('dragging');
  if (e.dataTransfer.files[0]) userAudio(e.dataTransfer.files[0]);
});
main().catch(fail);
