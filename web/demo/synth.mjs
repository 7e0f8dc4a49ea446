// synth.mjs — owns the demo's synthetic audio: a deterministic 16 kHz "speech" clip (a glottal pulse train at
// ~120 Hz through vowel formant resonators, syllable envelopes) with two voiced stretches between quiet noise.

export const SAMPLE_RATE = 16000;
export const SPEECH = [[1.0, 2.6], [3.4, 5.0]]; // seconds: where the clip holds voiced sound
const VOWELS = [[730, 1090, 2440], [270, 2290, 3010], [300, 870, 2240], [530, 1840, 2480], [660, 1720, 2410]];

function rng(seed) { // mulberry32 + Box-Muller: reproducible noise
  let a = seed >>> 0;
  const u = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u() + 1e-12)) * Math.cos(2 * Math.PI * u());
}

function resonate(src, f, bw, out, gain) { // two-pole resonator, added into out
  const r = Math.exp(-Math.PI * bw / SAMPLE_RATE);
  const a1 = -2 * r * Math.cos(2 * Math.PI * f / SAMPLE_RATE), a2 = r * r, g = 1 - r;
  let y1 = 0, y2 = 0;
  for (let i = 0; i < src.length; i++) {
    const v = g * src[i] - a1 * y1 - a2 * y2;
    y2 = y1;
    y1 = v;
    out[i] += v * gain[i];
  }
}

/** Float32Array of `seconds` of synthetic audio at 16 kHz. */
export function synthSpeech(seconds = 6, seed = 1) {
  const n = Math.round(seconds * SAMPLE_RATE);
  const src = new Float64Array(n);
  let phase = 0, prev = 0;
  for (let i = 0; i < n; i++) {
    const t = i / SAMPLE_RATE;
    phase += (120 + 15 * Math.sin(2 * Math.PI * 0.7 * t) + 5 * Math.sin(2 * Math.PI * 5 * t)) / SAMPLE_RATE;
    const k = Math.floor(phase);
    src[i] = k - prev;
    prev = k;
  }
  const out = new Float64Array(n);
  let v = 0;
  for (const [a, b] of SPEECH) {
    for (let s = a; s < b; s += 0.25) {
      const e = Math.min(s + 0.22, b);
      const i0 = Math.round(s * SAMPLE_RATE), i1 = Math.round(e * SAMPLE_RATE);
      const seg = src.subarray(i0, i1), dst = out.subarray(i0, i1);
      const env = Float64Array.from(seg, (_, j) => Math.sin(Math.PI * j / (seg.length - 1)) ** 0.6);
      VOWELS[v++ % VOWELS.length].forEach((f, j) => resonate(seg, f, 80 + 40 * j, dst, env));
    }
  }
  let peak = 1e-9;
  for (const x of out) peak = Math.max(peak, Math.abs(x));
  const noise = rng(seed);
  return Float32Array.from(out, (x) => 0.6 * x / peak + 0.01 * noise());
}
