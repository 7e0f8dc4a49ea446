// vad.mjs — owns running silero VAD (v5/v6 ONNX: input [1, 64+512], state [2,1,128], sr) over a 16 kHz clip with
// the onnxruntime-web-style API, and turning per-chunk speech probabilities into segments.

export const CHUNK = 512, CONTEXT = 64;

/** {probs: Float32Array per 32 ms chunk, runMs: per-chunk wall times} for `audio` (Float32Array, 16 kHz). */
export async function runVad(ort, session, audio, onChunk) {
  let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
  const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
  const n = Math.floor(audio.length / CHUNK);
  const probs = new Float32Array(n), runMs = [];
  const buf = new Float32Array(CONTEXT + CHUNK);
  for (let i = 0; i < n; i++) {
    buf.copyWithin(0, CHUNK, CHUNK + CONTEXT); // last 64 samples of the previous chunk
    if (i === 0) buf.fill(0, 0, CONTEXT);
    buf.set(audio.subarray(i * CHUNK, (i + 1) * CHUNK), CONTEXT);
    const t = performance.now();
    const out = await session.run({ input: new ort.Tensor('float32', buf.slice(), [1, CONTEXT + CHUNK]), state, sr });
    runMs.push(performance.now() - t);
    probs[i] = out.output.data[0];
    state = out.stateN;
    if (onChunk) onChunk(i, n, probs[i]);
  }
  return { probs, runMs };
}

/** Speech segments [[startSec, endSec]...] with hysteresis (on >= 0.5, off < 0.35) and 100 ms min silence. */
export function segments(probs, { on = 0.5, off = 0.35, minSilenceChunks = 3 } = {}) {
  const sec = CHUNK / 16000, out = [];
  let start = -1, quiet = 0;
  probs.forEach((p, i) => {
    if (start < 0 && p >= on) { start = i; quiet = 0; }
    else if (start >= 0) {
      quiet = p < off ? quiet + 1 : 0;
      if (quiet >= minSilenceChunks) { out.push([start * sec, (i - quiet + 1) * sec]); start = -1; }
    }
  });
  if (start >= 0) out.push([start * sec, probs.length * sec]);
  return out;
}
