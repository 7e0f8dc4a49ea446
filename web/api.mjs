// api.mjs — owns the list of public names every entry point exports (onnxruntime-web's, plus onnxide's getHost /
// shutdownHost for boot timings and teardown and onnxideBackend for registering onnxide under another name).
export { InferenceSession } from './session.mjs';
export { Tensor, TENSOR_TYPES } from './tensor.mjs';
export { env } from './env.mjs';
export { registerBackend } from './backends.mjs';
export { getHost, shutdownHost } from './host-client.mjs';
export { onnxideBackend } from './onnxide-backend.mjs';
