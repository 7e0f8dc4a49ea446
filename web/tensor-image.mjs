// tensor-image.mjs — owns the image <-> tensor conversions of onnxruntime-web's Tensor (Tensor.fromImage,
// tensor.toImageData, tensor.toDataURL), with its option defaults, channel orders and errors. Canvas work only here.

/** Offsets of the r, g, b, a planes in a tensor of `stride` pixels per plane (a: -1 when there is none). */
function planes(format, stride, withBGR) {
  const o = { r: 0, g: stride, b: 2 * stride, a: -1 };
  if (format === 'RGBA') o.a = 3 * stride;
  else if (format === 'RBG') [o.b, o.g] = [stride, 2 * stride];
  else if (format === 'BGR' && withBGR) [o.b, o.r] = [0, 2 * stride];
  return o;
}

/** [x, x, x, x] for a number, else the array's first three and its fourth or `fourth`. */
function perChannel(value, fourth) {
  return typeof value === 'number' ? [value, value, value, value] : [value[0], value[1], value[2], value[3] ?? fourth];
}

function newCanvas() {
  if (typeof document !== 'undefined') return document.createElement('canvas');
  if (typeof OffscreenCanvas !== 'undefined') return new OffscreenCanvas(1, 1);
  throw new Error('Canvas is not supported');
}

function context2d(canvas) {
  const ok = (typeof HTMLCanvasElement !== 'undefined' && canvas instanceof HTMLCanvasElement)
    || (typeof OffscreenCanvas !== 'undefined' && canvas instanceof OffscreenCanvas);
  return ok ? canvas.getContext('2d') : null;
}

/** RGBA (or RGB) pixel bytes of `draw` on a canvas of canvasW x canvasH, read back as width x height. */
function pixels(canvasW, canvasH, width, height, draw) {
  const canvas = newCanvas();
  canvas.width = canvasW;
  canvas.height = canvasH;
  const ctx = context2d(canvas);
  if (ctx == null) throw new Error('Can not access image data');
  draw(ctx, canvas);
  return ctx.getImageData(0, 0, width, height).data;
}

/** [Float32Array, dims] of image bytes: (pixel + bias) / mean per channel, planes in options.tensorFormat order. */
function bytesToTensor(bytes, options) {
  if (bytes === undefined) throw new Error('Image buffer must be defined');
  if (options.height === undefined || options.width === undefined) throw new Error('Image height and width must be defined');
  if (options.tensorLayout === 'NHWC') throw new Error('NHWC Tensor layout is not supported yet');
  const { height, width } = options;
  const norm = options.norm ?? { mean: 255, bias: 0 };
  const mean = perChannel(norm.mean, 255);
  const bias = perChannel(norm.bias, 0);
  const rgbIn = (options.format ?? 'RGBA') === 'RGB';
  const out = options.tensorFormat ?? 'RGB';
  const stride = height * width;
  const data = new Float32Array(stride * (out === 'RGBA' ? 4 : 3));
  const p = planes(out, stride, true);
  const step = rgbIn ? 3 : 4;
  for (let i = 0; i < stride; i++) {
    const px = i * step;
    data[p.r + i] = (bytes[px] + bias[0]) / mean[0];
    data[p.g + i] = (bytes[px + 1] + bias[1]) / mean[1];
    data[p.b + i] = (bytes[px + 2] + bias[2]) / mean[2];
    if (p.a !== -1 && !rgbIn) data[p.a + i] = (bytes[px + 3] + bias[3]) / mean[3];
  }
  return [data, [1, out === 'RGBA' ? 4 : 3, height, width]];
}

/** Tensor.fromImage: [data, dims] from an HTMLImageElement, ImageData, ImageBitmap or an image URL. */
export async function imageToTensor(image, options) {
  const is = (name) => typeof globalThis[name] !== 'undefined' && image instanceof globalThis[name];
  const opts = options ?? {}; // filled in place (height, width, formats), as onnxruntime-web does
  const resized = options !== undefined && options.resizedHeight !== undefined && options.resizedWidth !== undefined;
  if (is('HTMLImageElement')) {
    if (options !== undefined && options.tensorFormat !== undefined) {
      throw new Error('Image input config format must be RGBA for HTMLImageElement');
    }
    const [height, width] = resized ? [options.resizedHeight, options.resizedWidth] : [image.height, image.width];
    Object.assign(opts, { tensorFormat: 'RGBA', height, width });
    return bytesToTensor(pixels(image.width, image.height, width, height, (ctx) => ctx.drawImage(image, 0, 0)), opts);
  }
  if (is('ImageData')) {
    const [height, width] = resized ? [options.resizedHeight, options.resizedWidth] : [image.height, image.width];
    Object.assign(opts, { format: 'RGBA', height, width });
    const bytes = options === undefined ? image.data
      : pixels(width, height, width, height, (ctx) => ctx.putImageData(image, 0, 0));
    return bytesToTensor(bytes, opts);
  }
  if (is('ImageBitmap')) {
    if (options === undefined) throw new Error('Please provide image config with format for Imagebitmap');
    const { width, height } = image;
    const bytes = pixels(width, height, width, height, (ctx) => ctx.drawImage(image, 0, 0, width, height));
    return bytesToTensor(bytes, Object.assign(opts, { height, width }));
  }
  if (typeof image === 'string') {
    const img = new Image();
    img.crossOrigin = 'Anonymous';
    await new Promise((resolve, reject) => {
      img.onload = resolve;
      img.onerror = () => reject(new Error(`Failed to load image: ${image}`));
      img.src = image;
    });
    const { width, height } = img;
    const bytes = pixels(width, height, width, height, (ctx, c) => ctx.drawImage(img, 0, 0, c.width, c.height));
    return bytesToTensor(bytes, Object.assign(opts, { height, width }));
  }
  throw new Error('Input data provided is not supported - aborted tensor creation');
}

/** mean / bias of toImageData / toDataURL (mean's fourth default differs between the two, as in onnxruntime-web). */
function outputNorm(norm, meanFourth) {
  const mean = norm === undefined || norm.mean === undefined ? [255, 255, 255, 255] : perChannel(norm.mean, meanFourth);
  const bias = norm === undefined || norm.bias === undefined ? [0, 0, 0, 0] : perChannel(norm.bias, 0);
  return [mean, bias];
}

/** tensor.toImageData: an ImageData of (value - bias) * mean per channel; NCHW dims unless tensorLayout 'NHWC'. */
export function tensorToImageData(tensor, options) {
  const ctx = typeof document !== 'undefined' ? document.createElement('canvas').getContext('2d')
    : new OffscreenCanvas(1, 1).getContext('2d');
  if (ctx == null) throw new Error('Can not access image data');
  const nhwc = options?.tensorLayout === 'NHWC';
  const [height, width, channels] = nhwc ? [tensor.dims[1], tensor.dims[2], tensor.dims[3]]
    : [tensor.dims[2], tensor.dims[3], tensor.dims[1]];
  const format = options?.format ?? 'RGB';
  const [mean, bias] = outputNorm(options?.norm, 255);
  if (options !== undefined && ((options.format !== undefined && channels === 4 && options.format !== 'RGBA')
      || (channels === 3 && options.format !== 'RGB' && options.format !== 'BGR'))) {
    throw new Error("Tensor format doesn't match input tensor dims");
  }
  const stride = height * width;
  const p = planes(format, stride, false);
  const data = tensor.data;
  const image = ctx.createImageData(width, height);
  for (let i = 0; i < stride; i++) {
    const px = 4 * i;
    image.data[px] = (data[p.r + i] - bias[0]) * mean[0];
    image.data[px + 1] = (data[p.g + i] - bias[1]) * mean[1];
    image.data[px + 2] = (data[p.b + i] - bias[2]) * mean[2];
    image.data[px + 3] = p.a === -1 ? 255 : (data[p.a + i] - bias[3]) * mean[3];
  }
  return image;
}

/** tensor.toDataURL: the tensor painted pixel by pixel on a canvas of dims[3] x dims[2], as a PNG data URL. */
export function tensorToDataURL(tensor, options) {
  const canvas = typeof document !== 'undefined' ? document.createElement('canvas') : new OffscreenCanvas(1, 1);
  canvas.width = tensor.dims[3];
  canvas.height = tensor.dims[2];
  const ctx = canvas.getContext('2d');
  if (ctx == null) throw new Error('Can not access image data');
  const nhwc = options?.tensorLayout !== undefined && options.tensorLayout === 'NHWC';
  const [width, height] = nhwc ? [tensor.dims[2], tensor.dims[3]] : [tensor.dims[3], tensor.dims[2]];
  const [mean, bias] = outputNorm(options?.norm, 0);
  const p = planes(options?.format ?? 'RGB', height * width, false);
  const data = tensor.data;
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i++) {
      const r = (data[p.r + i] - bias[0]) * mean[0];
      const g = (data[p.g + i] - bias[1]) * mean[1];
      const b = (data[p.b + i] - bias[2]) * mean[2];
      const a = p.a === -1 ? 255 : (data[p.a + i] - bias[3]) * mean[3];
      ctx.fillStyle = `rgba(${r},${g},${b},${a})`;
      ctx.fillRect(x, y, 1, 1);
    }
  }
  if (!('toDataURL' in canvas)) throw new Error('toDataURL is not supported');
  return canvas.toDataURL();
}
