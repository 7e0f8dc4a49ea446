// onnxide-web-wasm.mjs — the entry point for `onnxruntime-web/wasm`: the same API, onnxide registered as 'cpu' and
// 'wasm' only (so 'webgpu' fails as there: "no available backend found. ERR: [webgpu] backend not found.").
import * as ort from './api.mjs';
import { registerOnnxide } from './onnxide-backend.mjs';

registerOnnxide({ webgpu: false });
export * from './api.mjs';
export default ort;
