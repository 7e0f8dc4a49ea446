// node_api.mjs — drives onnxide's JS API in Node.js (Pyodide in-process) and prints one JSON line of results for
// tests/browser/test_node.py: host mode, default CNN output, bytes input, int64 feeds, rejected bad input.
import * as ort from '../../web/onnxide-web.mjs';

const models = new URL('../../build/web/models/', import.meta.url);
const r = {};
const s = await ort.InferenceSession.create(new URL('default_cnn.onnx', models).href);
r.mode = (await ort.getHost()).mode;
r.inputNames = s.inputNames;
r.outputNames = s.outputNames;
const x = new Float32Array(3 * 64 * 64).map((_, i) => (i % 97) / 97);
const out = await s.run({ image: new ort.Tensor('float32', x, [1, 3, 64, 64]) });
r.probs = Array.from(out.probs.data);
r.dims = out.probs.dims;
const { readFile } = await import('node:fs/promises');
const bytes = new Uint8Array(await readFile(new URL('silero_vad.onnx', models)));
const vad = await ort.InferenceSession.create(bytes, { executionProviders: ['cpu'] });
const o = await vad.run({
  input: new ort.Tensor('float32', new Float32Array(576).fill(0.01), [1, 576]),
  state: new ort.Tensor('float32', new Float32Array(256), [2, 1, 128]),
  sr: new ort.Tensor('int64', [16000n], []),
});
r.vad = [o.output.data[0], o.stateN.dims];
try { await vad.run({ input: o.output }); } catch (e) { r.badFeed = e.message; }
try { await ort.InferenceSession.create('/no/such/model.onnx'); } catch (e) { r.missing = e.message; }
try { await ort.InferenceSession.create(new Uint8Array([8, 1, 18, 200, 1])); } catch (e) { r.corrupt = e.message; }
await s.release();
await vad.release();
r.timings = (await ort.getHost()).info.timings;
console.log(JSON.stringify(r));
