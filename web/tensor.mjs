// tensor.mjs — owns `Tensor` (onnxruntime-web's shape: type, data, dims, size) and the dtype table that maps
// tensor types to typed arrays. Plain data, no Pyodide: safe to import in the page, a Worker or Node.js.

const F16 = typeof globalThis.Float16Array === 'function' ? globalThis.Float16Array : null;

// type -> typed-array constructor (onnxruntime-web's table; 4-bit types are packed two per byte, low nibble first)
export const TYPED_ARRAYS = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array,
  int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array,
  int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, int4: Int8Array, uint4: Uint8Array,
};
export const TENSOR_TYPES = [...Object.keys(TYPED_ARRAYS), 'string'];
const PACKED = new Set(['int4', 'uint4']);

function typeOfArray(data) {
  if (Array.isArray(data)) {
    if (data.length && typeof data[0] === 'string') return 'string';
    if (data.length && typeof data[0] === 'boolean') return 'bool';
    return 'float32';
  }
  if (F16 && data instanceof F16) return 'float16';
  for (const [t, C] of [['float32', Float32Array], ['float64', Float64Array], ['int8', Int8Array],
    ['uint8', Uint8Array], ['uint8', Uint8ClampedArray], ['int16', Int16Array], ['uint16', Uint16Array],
    ['int32', Int32Array], ['uint32', Uint32Array], ['int64', BigInt64Array], ['uint64', BigUint64Array]]) {
    if (data instanceof C) return t;
  }
  throw new TypeError(`Unsupported tensor data: ${Object.prototype.toString.call(data)}`);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** IEEE half bits of a number (round to nearest even), for float16 tensors built from number[] without Float16Array. */
export function halfBits(v) {
  f32[0] = v;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h += 1;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h += 1;
  return sign | h;
}

/** Number of elements of `dims` (1 for a scalar). */
export function sizeOf(dims) {
  let n = 1;
  for (const d of dims) {
    if (!Number.isSafeInteger(d) || d < 0) throw new TypeError(`Invalid tensor dimension: ${d}`);
    n *= d;
  }
  return n;
}

/** Length the data array must have for `type` and element count `size`. */
export function dataLength(type, size) {
  return PACKED.has(type) ? Math.ceil(size / 2) : size;
}

function toTypedArray(type, data) {
  const C = TYPED_ARRAYS[type];
  if (type === 'string') {
    if (!Array.isArray(data) || data.some((s) => typeof s !== 'string')) {
      throw new TypeError('A string tensor needs an array of strings');
    }
    return data;
  }
  if (!C) throw new TypeError(`Unsupported tensor type: ${type}`);
  if (Array.isArray(data)) {
    if (type === 'int64' || type === 'uint64') return C.from(data, (v) => BigInt(v));
    if (type === 'bool') return C.from(data, (v) => (v ? 1 : 0));
    if (type === 'float16') return F16 ? F16.from(data) : Uint16Array.from(data, halfBits);
    return C.from(data);
  }
  if (data instanceof C || (type === 'float16' && F16 && data instanceof F16)) return data;
  if (type === 'uint8' && data instanceof Uint8ClampedArray) return data;
  throw new TypeError(`A ${type} tensor needs ${C.name} data, not ${data?.constructor?.name}`);
}

/** A CPU tensor: `new Tensor(type, data, dims)`, `new Tensor(type, data)` (1-D), `new Tensor(data, dims)`. */
export class Tensor {
  constructor(a, b, c) {
    let type, data, dims;
    if (typeof a === 'string') [type, data, dims] = [a, b, c];
    else [type, data, dims] = [typeOfArray(a), a, b];
    data = toTypedArray(type, data);
    if (dims === undefined) dims = [PACKED.has(type) ? data.length * 2 : data.length];
    dims = Array.from(dims, Number);
    const size = sizeOf(dims);
    if (dataLength(type, size) !== data.length) {
      throw new RangeError(`Tensor's size(${size}) does not match data length(${data.length}).`);
    }
    this.type = type;
    this.dims = Object.freeze(dims);
    this.size = size;
    this.location = 'cpu';
    this.cpuData = data;
  }

  /**
   * A tensor whose data lives elsewhere ('gpu-buffer': on a session's device, or a user's WebGPU buffer):
   * `download()` resolves to its data, `dispose()` frees it; `valueId` names a value the onnxide host keeps.
   */
  static fromLocation(location, { dataType, dims, download, dispose, gpuBuffer, valueId }) {
    const t = Object.create(Tensor.prototype);
    t.type = dataType;
    t.dims = Object.freeze(Array.from(dims, Number));
    t.size = sizeOf(t.dims);
    t.location = location;
    t.cpuData = undefined;
    Object.assign(t, { downloader: download, disposer: dispose, gpuBufferData: gpuBuffer, valueId });
    return t;
  }

  /** onnxruntime-web's form for a WebGPU buffer the caller owns. */
  static fromGpuBuffer(buffer, { dataType, dims, download, dispose }) {
    return Tensor.fromLocation('gpu-buffer', { dataType, dims, download, dispose, gpuBuffer: buffer });
  }

  /** Where the data is: 'cpu' or 'gpu-buffer' (`location`, also under the name onnxruntime-web's options use). */
  get dataLocation() {
    return this.location;
  }

  get data() {
    if (this.location !== 'cpu') {
      throw new Error('The data is not on CPU. Use `getData()` to download GPU data to CPU, or use `texture` or '
        + '`gpuBuffer` property to access the GPU data directly.');
    }
    if (!this.cpuData) throw new Error('The tensor has been disposed.');
    return this.cpuData;
  }

  get gpuBuffer() {
    if (this.location !== 'gpu-buffer') throw new Error('The data is not stored as a WebGPU buffer.');
    if (!this.gpuBufferData) {
      throw new Error('This tensor is on the device of an onnxide session running in its host (a Worker): read it '
        + 'with getData(), or feed it to another run');
    }
    return this.gpuBufferData;
  }

  /** The data on the CPU; with `releaseData` the device copy is freed and the tensor becomes a CPU tensor. */
  async getData(releaseData = false) {
    if (this.location === 'cpu') {
      const d = this.data;
      if (releaseData) this.dispose();
      return d;
    }
    if (!this.downloader) throw new Error('The tensor has been disposed.');
    const data = await this.downloader();
    if (releaseData) {
      await this.dispose();
      this.location = 'cpu';
      this.cpuData = data;
    }
    return data;
  }

  dispose() {
    this.cpuData = undefined;
    const free = this.disposer;
    this.downloader = this.disposer = this.gpuBufferData = this.valueId = undefined;
    return free ? free() : undefined;
  }

  reshape(dims) {
    return new Tensor(this.type, this.data, dims);
  }

  toString() {
    return `Tensor(${this.type}, [${this.dims.join(', ')}])`;
  }
}

/** Plain, structured-clone-friendly form of a tensor: {type, dims, data}, or {type, dims, valueId} for a value
 * an onnxide session left on its device (fed back without a transfer). */
export function toWire(t) {
  if (t instanceof Tensor && t.location !== 'cpu') {
    if (t.valueId === undefined && !t.gpuBufferData) throw new Error('A disposed tensor cannot be fed to a run');
    return t.valueId !== undefined ? { type: t.type, dims: Array.from(t.dims), valueId: t.valueId }
      : { type: t.type, dims: Array.from(t.dims), location: t.location, gpuBuffer: t.gpuBufferData };
  }
  if (!(t instanceof Tensor) && !(t && t.type && t.dims && t.data)) {
    throw new TypeError(`A feed must be a Tensor, not ${Object.prototype.toString.call(t)}`);
  }
  let data = t.data;
  if (F16 && data instanceof F16) data = new Uint16Array(data.buffer, data.byteOffset, data.length);
  if (data instanceof Uint8ClampedArray) data = new Uint8Array(data.buffer, data.byteOffset, data.length);
  return { type: t.type, dims: Array.from(t.dims), data };
}

/**
 * Tensor from the wire form, viewing `buffer` (an ArrayBuffer holding exactly the data) or an array of strings; a
 * value the host kept on a device ({location, valueId}) becomes a tensor there, read and freed through `host`.
 */
export function fromWire(w, host) {
  if (w.valueId !== undefined) {
    const valueId = w.valueId;
    return Tensor.fromLocation(w.location, {
      dataType: w.type, dims: w.dims, valueId, gpuBuffer: w.gpuBuffer,
      download: async () => fromWire(await host.call('downloadValue', { valueId })).data,
      dispose: () => host.call('releaseValue', { valueId }),
    });
  }
  if (w.type === 'string') return new Tensor('string', w.data, w.dims);
  const C = TYPED_ARRAYS[w.type];
  const data = w.data instanceof ArrayBuffer ? new C(w.data) : w.data;
  return new Tensor(w.type, data, w.dims);
}
