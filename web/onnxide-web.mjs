// onnxide-web.mjs — the public entry point, a drop-in for `import * as ort from 'onnxruntime-web'` (and for its
// './webgpu' and './all' entries): the API of api.mjs, with onnxide registered as 'cpu', 'wasm' and 'webgpu'.
import * as ort from './api.mjs';
import { registerOnnxide } from './onnxide-backend.mjs';

registerOnnxide({ webgpu: true });
export * from './api.mjs';
export default ort;
