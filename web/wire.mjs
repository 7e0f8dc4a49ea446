// wire.mjs — owns the plain, structured-clone-friendly form tensors take between the page and the onnxide host:
// feeds checked as onnxruntime-web checks them ({type, dims, data} / a value kept on a device), outputs back to Tensors.
import { Tensor, TYPED_ARRAYS } from './tensor.mjs';

/** {type, dims, data} of a feed, {type, dims, valueId} for a value an onnxide session left on its device, or
 * {type, dims, location, gpuBuffer} for a caller's GPUBuffer; `what` names it in errors ('input "x"'). */
export function toWire(t, what) {
  const location = t?.location;
  if (location === 'gpu-buffer') {
    if (t.valueId !== undefined) return { type: t.type, dims: Array.from(t.dims), valueId: t.valueId };
    return { type: t.type, dims: Array.from(t.dims), location, gpuBuffer: t.gpuBuffer };
  }
  if (location === 'ml-tensor') throw new Error('Tensor location "ml-tensor" is not supported without using WebNN.');
  if (location !== 'cpu') throw new Error(`invalid data location: ${location} for ${what}`);
  let data = t.data;
  if (t.type === 'string') {
    data.forEach((s, i) => {
      if (typeof s !== 'string') throw new TypeError(`tensor data at index ${i} is not a string`);
    });
    return { type: t.type, dims: Array.from(t.dims), data };
  }
  if (!ArrayBuffer.isView(data)) throw new TypeError(`${what}: tensor data must be a typed array`);
  // half floats as their bits, clamped bytes as bytes: the host copies them into numpy as such
  if (typeof Float16Array === 'function' && data instanceof Float16Array) {
    data = new Uint16Array(data.buffer, data.byteOffset, data.length);
  } else if (data instanceof Uint8ClampedArray) data = new Uint8Array(data.buffer, data.byteOffset, data.length);
  return { type: t.type, dims: Array.from(t.dims), data };
}

/**
 * Tensor from the wire form, viewing `data` (an ArrayBuffer holding exactly the data) or an array of strings; a
 * value the host kept on a device ({location, valueId}) becomes a 'gpu-buffer' tensor read and freed through `host`.
 */
export function fromWire(w, host) {
  if (w.valueId !== undefined) {
    const { valueId } = w;
    const t = new Tensor({
      location: w.location, type: w.type, dims: w.dims, gpuBuffer: w.gpuBuffer,
      download: async () => fromWire(await host.call('downloadValue', { valueId })).data,
      dispose: () => { host.call('releaseValue', { valueId }).catch(() => {}); },
    });
    t.valueId = valueId;
    return t;
  }
  if (w.type === 'string') return new Tensor('string', w.data, w.dims);
  const C = TYPED_ARRAYS[w.type];
  const data = w.data instanceof ArrayBuffer ? new C(w.data) : new C(w.data.buffer, w.data.byteOffset,
    w.data.byteLength / C.BYTES_PER_ELEMENT);
  return new Tensor(w.type, data, w.dims);
}
