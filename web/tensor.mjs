// tensor.mjs — owns `Tensor` with onnxruntime-web's semantics (constructor forms and checks, data locations,
// getData / dispose / reshape) and the tensor type <-> typed-array table. Plain data, no Pyodide: safe to import in
// the page, a Worker or Node.js. Image conversions live in tensor-image.mjs.
import { imageToTensor, tensorToDataURL, tensorToImageData } from './tensor-image.mjs';

/** Tensor types whose data is a typed array, in onnxruntime-web's table (4-bit types: two per byte in Uint8Array). */
const BASE_TYPES = [
  ['float32', Float32Array], ['uint8', Uint8Array], ['int8', Int8Array], ['uint16', Uint16Array],
  ['int16', Int16Array], ['int32', Int32Array], ['bool', Uint8Array], ['float64', Float64Array],
  ['uint32', Uint32Array], ['int4', Uint8Array], ['uint4', Uint8Array],
  ['int64', BigInt64Array], ['uint64', BigUint64Array],
];
const F16 = typeof globalThis.Float16Array === 'function' && globalThis.Float16Array.from ? globalThis.Float16Array : null;

/** type -> typed-array constructor; float16 is a Float16Array where the platform has one, else Uint16Array bits. */
export const TYPED_ARRAYS = Object.fromEntries([...BASE_TYPES, ['float16', F16 || Uint16Array]]);
export const TENSOR_TYPES = [...Object.keys(TYPED_ARRAYS), 'string'];
/** Typed-array constructor -> the type a tensor built from it without a type gets (bool / 4-bit need their type). */
const TYPE_OF_ARRAY = new Map([
  [Float32Array, 'float32'], [Uint8Array, 'uint8'], [Int8Array, 'int8'], [Uint16Array, 'uint16'],
  [Int16Array, 'int16'], [Int32Array, 'int32'], [Float64Array, 'float64'], [Uint32Array, 'uint32'],
  [BigInt64Array, 'int64'], [BigUint64Array, 'uint64'], ...(F16 ? [[F16, 'float16']] : []),
]);
const GPU_BUFFER_TYPES = new Set(['float32', 'float16', 'int32', 'int64', 'uint32', 'uint8', 'bool', 'uint4', 'int4']);
const ML_TENSOR_TYPES = new Set([...GPU_BUFFER_TYPES, 'uint64', 'int8']);

/** Number of elements of `dims` (1 for a scalar), with onnxruntime-web's errors for a bad dimension. */
export function sizeOf(dims) {
  let n = 1;
  dims.forEach((d, i) => {
    if (typeof d !== 'number' || !Number.isSafeInteger(d)) throw new TypeError(`dims[${i}] must be an integer, got: ${d}`);
    if (d < 0) throw new RangeError(`dims[${i}] must be a non-negative integer, got: ${d}`);
    n *= d;
  });
  return n;
}

/** The data array of `new Tensor(type, data, dims)`: typed arrays as given, number[] converted, Uint8ClampedArray copied. */
function typedData(type, data) {
  if (type === 'string') {
    if (!Array.isArray(data)) throw new TypeError("A string tensor's data must be a string array.");
    return data;
  }
  const C = TYPED_ARRAYS[type];
  if (C === undefined) throw new TypeError(`Unsupported tensor type: ${type}.`);
  if (Array.isArray(data)) {
    if ((type === 'float16' && C === Uint16Array) || type === 'int4' || type === 'uint4') {
      throw new TypeError(`Creating a ${type} tensor from number array is not supported. Please use ${C.name} as data.`);
    }
    return type === 'int64' || type === 'uint64' ? C.from(data, BigInt) : C.from(data);
  }
  if (data instanceof C) return data;
  if (data instanceof Uint8ClampedArray) {
    if (type === 'uint8') return Uint8Array.from(data);
    throw new TypeError("A Uint8ClampedArray tensor's data must be type of uint8");
  }
  if (type === 'float16' && C !== Uint16Array && data instanceof Uint16Array) {
    return new C(data.buffer, data.byteOffset, data.length); // half bits viewed as Float16Array
  }
  throw new TypeError(`A ${type} tensor's data must be type of ${C}`);
}

/** [type, data] of `new Tensor(data, dims)`: the type follows the data. */
function inferred(data) {
  if (Array.isArray(data)) {
    if (data.length === 0) throw new TypeError('Tensor type cannot be inferred from an empty array.');
    const first = typeof data[0];
    if (first === 'string') return ['string', data];
    if (first === 'boolean') return ['bool', Uint8Array.from(data)];
    throw new TypeError(`Invalid element type of data array: ${first}.`);
  }
  if (data instanceof Uint8ClampedArray) return ['uint8', Uint8Array.from(data)];
  const type = TYPE_OF_ARRAY.get(data?.constructor);
  if (type === undefined) throw new TypeError(`Unsupported type for tensor data: ${data?.constructor}.`);
  return [type, data];
}

/** The fields a tensor whose data lives elsewhere keeps ({location, type, dims, ...} constructor form). */
function locatedFields(o) {
  const { location, type } = o;
  const check = (ok, what) => {
    if (!ok) throw new TypeError(`unsupported type "${type}" to create tensor from ${what}`);
  };
  switch (location) {
    case 'cpu-pinned': {
      const C = TYPED_ARRAYS[type];
      if (!C || type === 'string') throw new TypeError(`unsupported type "${type}" to create tensor from pinned buffer`);
      if (!(o.data instanceof C)) throw new TypeError(`buffer should be of type ${C.name}`);
      return { cpuData: o.data };
    }
    case 'texture':
      check(type === 'float32', 'texture');
      return { gpuTextureData: o.texture, downloader: o.download, disposer: o.dispose };
    case 'gpu-buffer':
      check(GPU_BUFFER_TYPES.has(type), 'gpu buffer');
      return { gpuBufferData: o.gpuBuffer, downloader: o.download, disposer: o.dispose };
    case 'ml-tensor':
      check(ML_TENSOR_TYPES.has(type), 'MLTensor');
      return { mlTensorData: o.mlTensor, downloader: o.download, disposer: o.dispose };
    default:
      throw new Error(`Tensor constructor: unsupported location '${location}'`);
  }
}

export class Tensor {
  /**
   * `new Tensor(type, data, dims?)`, `new Tensor(data, dims?)` (type from the data), or
   * `new Tensor({location, type, dims, ...})` for data elsewhere ('gpu-buffer', 'cpu-pinned', 'texture', 'ml-tensor').
   * `dims` is kept as given (a mutable array, as in onnxruntime-web); its product must match the data length.
   */
  constructor(a, b, c) {
    let type, dims;
    if (typeof a === 'object' && a !== null && 'location' in a) {
      Object.assign(this, locatedFields(a));
      this.dataLocation = a.location;
      ({ type, dims } = a);
    } else {
      let data;
      if (typeof a === 'string') {
        [type, data, dims] = [a, typedData(a, b), c];
      } else {
        [type, data] = inferred(a);
        dims = b;
      }
      if (dims === undefined) dims = [data.length];
      else if (!Array.isArray(dims)) throw new TypeError("A tensor's dims must be a number array");
      this.cpuData = data;
      this.dataLocation = 'cpu';
    }
    const size = sizeOf(dims);
    if (this.cpuData && size !== this.cpuData.length
        && !((type === 'int4' || type === 'uint4') && Math.ceil(size / 2) === this.cpuData.length)) {
      throw new Error(`Tensor's size(${size}) does not match data length(${this.cpuData.length}).`);
    }
    this.type = type;
    this.dims = dims;
    this.size = size;
  }

  static async fromImage(image, options) {
    const [data, dims] = await imageToTensor(image, options);
    return new Tensor('float32', data, dims);
  }

  static fromGpuBuffer(gpuBuffer, { dataType, dims, download, dispose }) {
    return new Tensor({ location: 'gpu-buffer', type: dataType ?? 'float32', gpuBuffer, dims, download, dispose });
  }

  static fromPinnedBuffer(type, buffer, dims) {
    return new Tensor({ location: 'cpu-pinned', type, data: buffer, dims: dims ?? [buffer.length] });
  }

  static fromTexture(texture, { width, height, download, dispose }) {
    return new Tensor({ location: 'texture', type: 'float32', texture, dims: [1, height, width, 4], download, dispose });
  }

  static fromMLTensor(mlTensor, { dataType, dims, download, dispose }) {
    return new Tensor({ location: 'ml-tensor', type: dataType ?? 'float32', mlTensor, dims, download, dispose });
  }

  toDataURL(options) {
    return tensorToDataURL(this, options);
  }

  toImageData(options) {
    return tensorToImageData(this, options);
  }

  /** Where the data is: 'cpu', 'cpu-pinned', 'gpu-buffer', 'texture', 'ml-tensor', or 'none' once disposed. */
  get location() {
    return this.dataLocation;
  }

  get data() {
    this.ensureValid();
    if (!this.cpuData) {
      throw new Error('The data is not on CPU. Use `getData()` to download GPU data to CPU, '
        + 'or use `texture` or `gpuBuffer` property to access the GPU data directly.');
    }
    return this.cpuData;
  }

  get gpuBuffer() {
    this.ensureValid();
    if (!this.gpuBufferData) {
      throw new Error(this.valueId !== undefined
        ? 'The data is not stored as a WebGPU buffer. (This tensor is on the device of an onnxide session running '
          + 'in its Worker host: read it with getData(), or feed it to another run.)'
        : 'The data is not stored as a WebGPU buffer.');
    }
    return this.gpuBufferData;
  }

  get texture() {
    this.ensureValid();
    if (!this.gpuTextureData) throw new Error('The data is not stored as a WebGL texture.');
    return this.gpuTextureData;
  }

  get mlTensor() {
    this.ensureValid();
    if (!this.mlTensorData) throw new Error('The data is not stored as a WebNN MLTensor.');
    return this.mlTensorData;
  }

  /**
   * The data on the CPU. A GPU tensor is downloaded once and becomes a CPU tensor; `releaseData` also frees the
   * device copy then. A CPU tensor's data is returned as it is (releaseData does nothing there).
   */
  async getData(releaseData) {
    this.ensureValid();
    if (this.dataLocation === 'cpu' || this.dataLocation === 'cpu-pinned') return this.data;
    if (!['texture', 'gpu-buffer', 'ml-tensor'].includes(this.dataLocation)) {
      throw new Error(`cannot get data from location: ${this.dataLocation}`);
    }
    if (!this.downloader) throw new Error('The current tensor is not created with a specified data downloader.');
    if (this.isDownloading) throw new Error('The current tensor is being downloaded.');
    try {
      this.isDownloading = true;
      const data = await this.downloader();
      this.downloader = undefined;
      this.dataLocation = 'cpu';
      this.cpuData = data;
      if (releaseData && this.disposer) {
        this.disposer();
        this.disposer = undefined;
      }
      return data;
    } finally {
      this.isDownloading = false;
    }
  }

  /** Frees the data (a device copy through its disposer); the tensor's location becomes 'none'. */
  dispose() {
    if (this.isDownloading) throw new Error('The current tensor is being downloaded.');
    if (this.disposer) {
      this.disposer();
      this.disposer = undefined;
    }
    this.cpuData = this.gpuTextureData = this.gpuBufferData = this.mlTensorData = undefined;
    this.downloader = this.isDownloading = this.valueId = undefined;
    this.dataLocation = 'none';
  }

  ensureValid() {
    if (this.dataLocation === 'none') throw new Error('The tensor is disposed.');
  }

  /** A tensor of new dims over the same data (no copy); not for tensors that own device resources. */
  reshape(dims) {
    this.ensureValid();
    if (this.downloader || this.disposer) throw new Error('Cannot reshape a tensor that owns GPU resource.');
    const loc = this.dataLocation;
    if (loc === 'cpu') return new Tensor(this.type, this.data, dims);
    const field = { 'cpu-pinned': 'data', texture: 'texture', 'gpu-buffer': 'gpuBuffer', 'ml-tensor': 'mlTensor' }[loc];
    if (!field) throw new Error(`tensorReshape: tensor location ${loc} is not supported`);
    return new Tensor({ location: loc, type: this.type, dims, [field]: this[field === 'data' ? 'cpuData' : field] });
  }
}
