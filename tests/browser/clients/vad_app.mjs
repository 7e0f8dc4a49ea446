// vad_app.mjs — a small app on @ricky0123/vad-web (from the npm registry, unmodified): its NonRealTimeVAD finds the
// speech segments of a clip. tests/browser/test_npm_clients.py bundles it with esbuild twice, once with the real
// onnxruntime-web and once with the packed onnxide installed as `onnxruntime-web`, and compares the two.
import { NonRealTimeVAD } from '@ricky0123/vad-web';

window.runVad = async (samples, sampleRate) => {
  const vad = await NonRealTimeVAD.new({ modelURL: new URL('silero_vad_legacy.onnx', import.meta.url).href });
  const segments = [];
  const audio = Float32Array.from(samples);
  for await (const { audio: speech, start, end } of vad.run(audio, sampleRate)) {
    segments.push({ start, end, samples: speech.length, sum: speech.reduce((a, b) => a + Math.abs(b), 0) });
  }
  return segments;
};
window.appReady = true;
