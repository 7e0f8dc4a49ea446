// app.mjs — an onnxruntime-web app (classify a 64×64 RGB canvas with a 10-class CNN). Written for
// `import * as ort from 'onnxruntime-web'`; the line below is the only change made to run it on onnxide.
import * as ort from '../../onnxide-web.mjs';

const MODEL_URL = new URL('../../../build/web/models/default_cnn.onnx', import.meta.url).href;

function drawPattern(ctx) {
  const g = ctx.createLinearGradient(0, 0, 64, 64);
  g.addColorStop(0, '#f4a261');
  g.addColorStop(1, '#2a9d8f');
  ctx.fillStyle = g;
  ctx.fillRect(0, 0, 64, 64);
  ctx.fillStyle = '#264653';
  ctx.beginPath();
  ctx.arc(32, 32, 14, 0, 2 * Math.PI);
  ctx.fill();
}

function toTensor(ctx) {
  const { data } = ctx.getImageData(0, 0, 64, 64);
  const chw = new Float32Array(3 * 64 * 64);
  for (let i = 0; i < 64 * 64; i++) {
    for (let c = 0; c < 3; c++) chw[c * 64 * 64 + i] = data[i * 4 + c] / 255;
  }
  return new ort.Tensor('float32', chw, [1, 3, 64, 64]);
}

async function main() {
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'warning';
  const ctx = document.getElementById('img').getContext('2d', { willReadFrequently: true });
  drawPattern(ctx);
  const session = await ort.InferenceSession.create(MODEL_URL, {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
  });
  const feeds = { [session.inputNames[0]]: toTensor(ctx) };
  const results = await session.run(feeds);
  const probs = results[session.outputNames[0]].data;
  const top = Array.from(probs, (p, i) => [i, p]).sort((a, b) => b[1] - a[1]).slice(0, 3);
  document.getElementById('top').innerHTML = top.map(([i, p]) => `<li>class ${i}: ${p.toFixed(4)}</li>`).join('');
  document.getElementById('status').textContent = 'done';
  window.appResult = { top, probs: Array.from(probs), dims: results[session.outputNames[0]].dims };
  await session.release();
}

main().catch((e) => {
  document.getElementById('status').textContent = `error: ${e.message}`;
  window.appResult = { error: e.message };
});
