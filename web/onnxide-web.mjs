// onnxide-web.mjs — the public entry point, a drop-in for `import * as ort from 'onnxruntime-web'`:
// InferenceSession, Tensor, env (plus onnxide's getHost/shutdownHost for boot timings and teardown).
export { InferenceSession } from './session.mjs';
export { Tensor, TENSOR_TYPES } from './tensor.mjs';
export { env } from './env.mjs';
export { getHost, shutdownHost } from './host-client.mjs';
