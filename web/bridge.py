"""Python side of onnxide's JS host (runs inside Pyodide): sessions by id, JS tensors <-> numpy, clean errors.

Every public function returns a dict; a failure is {"error": message, "code": onnxruntime's error code} so the JS
side can reject in onnxruntime-web's form ("failed to call OrtRun(). ERROR_CODE: 2, ERROR_MESSAGE: ..."). JS buffers
are copied once into numpy (JsBuffer.assign_to) and outputs once into fresh JS Uint8Arrays (JsBuffer.assign) that
the host transfers to the page. Runs go through the session's async path (a GPU EP's kernels and readbacks are
awaited). Outputs a session keeps on its device
(preferredOutputLocation 'gpu-buffer') stay here as OrtValues under an id; the JS Tensor downloads or releases
them by that id, and feeds them back to a run without a transfer. JS custom ops (the JS API's `customOps`) are
custom ops of the session (onnxide.ops.custom) whose kernel sends its inputs to the JS kernel where it lives and
awaits its Tensors, checked like any custom op's results.
"""
import functools
import inspect
import math
import os
import shutil
import time

import numpy as np

import onnxide
from onnxide import dtypes as dt
from onnxide.tensors import pack_bits, unpack_bits

try:  # Pyodide
    from js import Uint8Array
    from pyodide.ffi import JsException, to_js
except ImportError:  # pragma: no cover - only imported by the JS host
    Uint8Array = to_js = None
    JsException = Exception

# onnxruntime-web tensor type <-> ONNX element type
JS_TO_CODE = {
    "float32": dt.FLOAT, "float64": dt.DOUBLE, "float16": dt.FLOAT16, "int8": dt.INT8, "uint8": dt.UINT8,
    "int16": dt.INT16, "uint16": dt.UINT16, "int32": dt.INT32, "uint32": dt.UINT32, "int64": dt.INT64,
    "uint64": dt.UINT64, "bool": dt.BOOL, "string": dt.STRING, "int4": dt.INT4, "uint4": dt.UINT4,
}
CODE_TO_JS = {v: k for k, v in JS_TO_CODE.items()}
LEVELS = {"disabled": 0, "basic": 1, "extended": 2, "layout": 3, "all": 99}
# onnxruntime-web's backend names: 'cpu' and 'wasm' are both its WebAssembly backend (here the WASM EP where its
# kernels are present, the numpy CPU EP behind it); onnxide's own provider names are taken as they are
EP_NAMES = {"cpu": "WasmExecutionProvider", "wasm": "WasmExecutionProvider", "webgpu": "WebGpuExecutionProvider"}
ROOT = "/tmp/onnxide_sessions"
LOCATIONS = ("cpu", "cpu-pinned", "gpu-buffer", "ml-tensor", "texture")  # onnxruntime-web's data locations
ON_DEVICE = "gpu-buffer"

_sessions = {}
_values = {}  # id -> OrtValue a session left on its device for JS
_next_id = [1]


# onnxruntime's OrtErrorCode per exception class (a Python built-in exception: RUNTIME_EXCEPTION, named in the text)
ERROR_CODES = {"Fail": 1, "InvalidArgument": 2, "NoSuchFile": 3, "NoModel": 4, "EngineError": 5,
               "RuntimeException": 6, "InvalidProtobuf": 7, "ModelLoaded": 8, "NotImplemented": 9, "InvalidGraph": 10,
               "EPFail": 11, "ModelLoadCanceled": 12, "ModelRequiresCompilation": 13, "NotFound": 14}


class CallFailed(Exception):
    """A failure onnxruntime-web reports after another call than OrtRun(): `what` is its prefix there."""

    def __init__(self, what, code, message):
        super().__init__(message)
        self.what, self.code = what, code


def _error(e):
    msg = str(e).strip() or repr(e)
    if isinstance(e, CallFailed):
        return _js({"error": msg, "code": e.code, "what": e.what})
    code = ERROR_CODES.get(type(e).__name__) if isinstance(e, onnxide.errors.OnnxideError) else None
    if code is None:
        code, msg = 6, f"{type(e).__name__}: {msg}"
    return _js({"error": msg, "code": code})


def _clean(fn):
    """Failures come back as {"error": ...} (the JS side rejects with onnxide's message); async functions too."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def awaiting(*args, **kwargs):
            try:
                return await fn(*args, **kwargs)
            except Exception as e:  # reported to JS as a rejected promise
                return _error(e)
        return awaiting

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # reported to JS as a rejected promise
            return _error(e)
    return wrapper


def _js(value):
    return to_js(value, dict_converter=lambda entries: __import__("js").Object.fromEntries(entries),
                 create_pyproxies=False)


UNNAMED_DIM = 2 ** 32 - 1


def _meta(arg):
    t = arg.type
    is_tensor = t.startswith("tensor(")
    elem = t[7:-1] if is_tensor else t
    js_type = {"float": "float32", "double": "float64"}.get(elem, elem)
    if not is_tensor:
        return {"name": arg.name, "isTensor": False}
    # onnxruntime-web's form: symbolic dims by name, unnamed dynamic ones as 4294967295 (its -1 read as a uint32);
    # an unknown rank reads as [] there too
    shape = [d if isinstance(d, (int, str)) else UNNAMED_DIM for d in (arg.shape or [])]
    return {"name": arg.name, "isTensor": True, "type": js_type, "shape": shape}


@_clean
def info():
    return _js({"onnxide": onnxide.__version__, "numpy": np.__version__,
                "providers": onnxide.get_available_providers()})


@_clean
def init_webgpu(device, f16, limits, description):
    """The JS host's GPUDevice becomes the WebGPU EP's device (executionProviders: ['webgpu'])."""
    from onnxide.eps import webgpu
    webgpu.init_page(device, f16, limits, description)
    return _js({"providers": onnxide.get_available_providers()})


@_clean
def external_locations(model):
    """Relative paths of the external-data files `model` (JS Uint8Array) refers to."""
    from onnxide import proto as P
    mp = P.parse(P.ModelProto, model.to_bytes())
    found = []

    def walk(g):
        if g is None:
            return
        for t in g.initializer:
            if t.data_location == 1:
                loc = {e.key: e.value for e in t.external_data}.get("location")
                if loc and loc not in found:
                    found.append(loc)
        for n in g.node:
            for a in n.attribute:
                walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(mp.graph)
    return _js({"locations": found})


@_clean
def create(model, external, options, call_kernel=None):
    """New session from model bytes + [(path, bytes)] external files; options: executionProviders, level,
    customOps ([{domain, opType, kernelId, inputs, outputs, attributes}] run by `call_kernel`)."""
    opts = options.to_py() if hasattr(options, "to_py") else dict(options or {})
    sid = _next_id[0]
    _next_id[0] += 1
    folder = f"{ROOT}/{sid}"
    os.makedirs(folder, exist_ok=True)
    path = f"{folder}/model.onnx"
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        f.write(model.to_bytes())
    for item in (external.to_py() if hasattr(external, "to_py") else external or []):
        rel, data = item["path"], item["data"]
        target = os.path.normpath(os.path.join(folder, rel))
        if not target.startswith(folder + "/"):
            raise onnxide.InvalidArgument(f"External data path '{rel}' leaves the model's folder")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data.to_bytes() if hasattr(data, "to_bytes") else bytes(data))
    so = onnxide.SessionOptions()
    level = opts.get("graphOptimizationLevel") or "all"
    if level not in LEVELS:
        raise onnxide.InvalidArgument(f"unsupported graph optimization level: {level}")
    so.graph_optimization_level = LEVELS[level]
    for decl in opts.get("customOps") or []:
        so.register_custom_op(_js_custom_op(decl, call_kernel))
    providers = []
    available = onnxide.get_available_providers()
    for ep in opts.get("executionProviders") or ["wasm"]:  # onnxruntime-web's default backend
        name = ep if isinstance(ep, str) else ep.get("name")
        full = EP_NAMES.get(name, name)
        if name in ("cpu", "wasm") and full not in available:
            continue  # no WASM kernels in this build: the CPU EP alone
        if full not in available:
            raise onnxide.InvalidArgument(f"not supported execution provider: {name}")
        if full not in providers:
            providers.append(full)
    try:
        sess = onnxide.InferenceSession(path, so, providers=providers or ["CPUExecutionProvider"])
        where = _output_locations(sess, opts.get("preferredOutputLocation"))
    except onnxide.InvalidProtobuf:
        shutil.rmtree(folder, ignore_errors=True)
        # onnxruntime-web loads from bytes: its C API says only this (natively onnxide names the field at fault)
        raise onnxide.InvalidProtobuf("Failed to load model because protobuf parsing failed.") from None
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    declared = {a.name: a.type for a in sess.get_outputs()}  # (get_outputs builds its NodeArgs anew each call)
    _sessions[sid] = (sess, folder, where, declared)
    return _js({"id": sid, "inputMetadata": [_meta(a) for a in sess.get_inputs()],
                "outputMetadata": [_meta(a) for a in sess.get_outputs()], "providers": sess.get_providers(),
                "createMs": (time.perf_counter() - t0) * 1e3})


JS_ATTR_TYPES = {"int": dt.INT64, "float": dt.FLOAT, "string": dt.STRING}


def _js_types(decl, key):
    """The element type codes of a JS custom op's declared `inputs` / `outputs` (None: not declared)."""
    types = decl.get(key)
    if types is None:
        return None
    where = f"customOps['{decl['domain']}'].{decl['opType']}.{key}"
    bad = [t for t in types if t not in JS_TO_CODE]
    if bad:
        raise onnxide.InvalidArgument(f"{where}: unknown tensor type {bad[0]!r} (one of {list(JS_TO_CODE)})")
    return [JS_TO_CODE[t] for t in types]


def _js_attr_types(decl):
    """{name: code or [code]} of a JS custom op's declared attributes ('int', 'float', 'string', 'ints', ...)."""
    attrs = decl.get("attributes")
    if attrs is None:
        return None
    out = {}
    for name, kind in attrs.items():
        base = kind[:-1] if isinstance(kind, str) and kind.endswith("s") and kind[:-1] in JS_ATTR_TYPES else kind
        if base not in JS_ATTR_TYPES:
            raise onnxide.InvalidArgument(f"customOps['{decl['domain']}'].{decl['opType']}.attributes.{name}: unknown "
                                          f"attribute type {kind!r} (one of int, float, string, ints, floats, strings)")
        out[name] = [JS_ATTR_TYPES[base]] if base != kind else JS_ATTR_TYPES[base]
    return out


def _js_attr(value):
    if isinstance(value, (int, float, str)) or isinstance(value, list) and all(
            isinstance(v, (int, float, str)) for v in value):
        return value
    raise onnxide.NotImplemented(f"an attribute of type {type(value).__name__} cannot be passed to a JS kernel")


def _js_custom_op(decl, call_kernel):
    """The session's custom op for a JS kernel: a coroutine sending the inputs (wire form) to `call_kernel` and
    taking its Tensors back as numpy arrays."""
    from onnxide.extensions import CustomOp
    name = f"{decl['domain']}:{decl['opType']}"
    kernel_id = decl["kernelId"]

    async def kernel(*inputs, **attrs):
        wire = []
        for x in inputs:
            if x is None:
                wire.append(None)
                continue
            t, dims, data = _to_wire(x, "")
            wire.append({"type": t, "dims": dims, "data": data})
        try:
            outs = await call_kernel(kernel_id, _js(wire), _js({k: _js_attr(v) for k, v in attrs.items()}))
        except JsException as e:
            raise onnxide.RuntimeException(f"custom op {name}: {getattr(e, 'message', None) or e}") from None
        return tuple(_to_numpy("", o, f"custom op {name} output {i}") for i, o in enumerate(outs))

    if call_kernel is None:
        raise onnxide.InvalidArgument(f"custom op {name}: this host cannot call JS kernels")
    return CustomOp(kernel, decl["opType"], decl["domain"], _js_types(decl, "inputs"), _js_types(decl, "outputs"),
                    _js_attr_types(decl))


def _output_locations(sess, preferred):
    """{output name: Device} for the outputs preferredOutputLocation keeps on the session's device."""
    if preferred is None:
        return {}
    names = [o.name for o in sess.get_outputs()]
    if isinstance(preferred, str):
        wanted = dict.fromkeys(names, preferred)
    else:
        wanted = dict(preferred.to_py() if hasattr(preferred, "to_py") else preferred)
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise onnxide.InvalidArgument(f"preferredOutputLocation names unknown outputs {unknown}")
    bad = sorted({loc for loc in wanted.values() if loc not in LOCATIONS})
    if bad:
        raise onnxide.InvalidArgument(f"Unsupported preferredOutputLocation {bad[0]!r} (one of {list(LOCATIONS)})")
    other = sorted({loc for loc in wanted.values() if loc not in ("cpu", "cpu-pinned", ON_DEVICE)})
    if other:
        raise onnxide.NotImplemented(f"preferredOutputLocation {other[0]!r} is not supported by onnxide")
    device = sess._executor.devices[0] if sess._executor.devices else None
    keep = [n for n, loc in wanted.items() if loc == ON_DEVICE]
    if keep and device is None:
        raise onnxide.InvalidArgument(f"preferredOutputLocation '{ON_DEVICE}' needs a GPU execution provider; this "
                                      f"session runs on {sess.get_providers()}")
    return {n: device for n in keep}


def _feed(name, feed, sess):
    """A JS feed as a run takes it: a value this host keeps on a device (by id), else a numpy copy."""
    vid = getattr(feed, "valueId", None)
    if vid is not None:
        if vid not in _values:
            raise onnxide.InvalidArgument(f"Input '{name}': its GPU tensor was disposed")
        return _values[vid]
    if getattr(feed, "location", "cpu") not in ("cpu", "cpu-pinned", None):
        return _gpu_feed(name, feed, sess)
    return _to_numpy(name, feed)


def _gpu_feed(name, feed, sess):
    """A page's GPUBuffer (Tensor.fromGpuBuffer on env.webgpu.device) read in place by the session's WebGPU EP."""
    gpu = getattr(feed, "gpuBuffer", None)
    device = next((d for d in sess._executor.devices if d.type == "webgpu"), None)
    if gpu is None or device is None:
        raise onnxide.InvalidArgument(f"Input '{name}': a tensor at location '{feed.location}' that no execution "
                                      f"provider of this session can read")
    code = JS_TO_CODE.get(feed.type)
    if code is None:
        raise onnxide.InvalidArgument(f"Input '{name}': unsupported tensor type '{feed.type}'")
    return onnxide.OrtValue(device.adopt(gpu, [int(d) for d in feed.dims], dt.np_dtype(code)), device)


def _to_numpy(name, feed, what=None):
    """A numpy copy of a JS tensor in wire form ({type, dims, data}); `what` names it in errors (input `name`)."""
    what = what or f"Input '{name}'"
    js_type, dims = feed.type, [int(d) for d in feed.dims]
    code = JS_TO_CODE.get(js_type)
    if code is None:
        raise onnxide.InvalidArgument(f"{what}: unsupported tensor type '{js_type}'")
    count = math.prod(dims)
    if code == dt.STRING:
        return np.array(list(feed.data.to_py()), dtype=object).reshape(dims)
    if code in (dt.INT4, dt.UINT4):
        raw = np.empty(feed.data.byteLength, np.uint8)
        feed.data.assign_to(raw)
        return unpack_bits(raw, code, count).reshape(dims)
    dtype = np.dtype(np.uint8) if code == dt.BOOL else dt.np_dtype(code)
    if feed.data.byteLength != count * dtype.itemsize:
        raise onnxide.InvalidArgument(f"{what}: {feed.data.byteLength} bytes of data for dims {dims}")
    arr = np.empty(dims, dtype)
    feed.data.assign_to(arr)
    return arr != 0 if code == dt.BOOL else arr


def _to_wire(arr, declared):
    """(type, dims, Uint8Array | list[str]) of an output array."""
    arr = np.asarray(arr)
    elem = declared[7:-1] if declared.startswith("tensor(") else None
    code = dt.CODE_BY_NAME.get(elem) if elem else None
    if code is None or not dt.is_exotic(code):
        code = dt.code_of(arr.dtype)
    if code not in CODE_TO_JS:
        raise onnxide.NotImplemented(f"Output type {dt.NAMES.get(code, code)} has no onnxruntime-web tensor type")
    dims = [int(d) for d in arr.shape]
    if code == dt.STRING:
        return CODE_TO_JS[code], dims, [str(s) for s in arr.reshape(-1)]
    if code in (dt.INT4, dt.UINT4):
        raw = pack_bits(arr, code)
    else:
        raw = np.ascontiguousarray(arr, dtype=np.uint8 if code == dt.BOOL else dt.np_dtype(code))
    out = Uint8Array.new(raw.nbytes)
    if raw.nbytes:
        out.assign(raw.reshape(-1).view(np.uint8))
    return CODE_TO_JS[code], dims, out


@_clean
async def run(sid, feeds, fetches):
    """Outputs [{name, type, dims, data} or {name, type, dims, location, valueId}] and timings for JS feeds
    [{name, type, dims, data} or {name, valueId}]."""
    if sid not in _sessions:
        raise onnxide.InvalidArgument(f"Session {sid} was released")
    sess, _, where, declared = _sessions[sid]
    t0 = time.perf_counter()
    np_feeds = {f.name: _feed(f.name, f, sess) for f in feeds}
    t1 = time.perf_counter()
    names = list(fetches.to_py()) if fetches is not None and hasattr(fetches, "to_py") else None
    names = names or list(declared)
    outputs = await sess._run_awaitable(names, np_feeds, {n: d for n, d in where.items() if n in names})
    t2 = time.perf_counter()
    wire = []
    for i, (name, value) in enumerate(zip(names, outputs)):
        if name in where:
            vid = _next_id[0]
            _next_id[0] += 1
            _values[vid] = onnxide.OrtValue(value, where[name])
            wire.append({"name": name, "type": _js_type(value.dtype), "dims": [int(d) for d in value.shape],
                         "location": ON_DEVICE, "valueId": vid})
            continue
        if not isinstance(value, np.ndarray) and not np.isscalar(value):
            # (onnxruntime-web reads every output as a tensor: a sequence or map output fails there like this)
            raise CallFailed(f"Can't access output tensor data on index {i}.", 9,
                             "Reading data from non-tensor typed value is not supported.")
        t, dims, data = _to_wire(value, declared.get(name, ""))
        wire.append({"name": name, "type": t, "dims": dims, "data": data})
    t3 = time.perf_counter()
    return _js({"outputs": wire, "timings": {"feedsMs": (t1 - t0) * 1e3, "runMs": (t2 - t1) * 1e3,
                                             "outputsMs": (t3 - t2) * 1e3}})


def _js_type(dtype):
    code = dt.code_of(np.dtype(dtype))
    if code not in CODE_TO_JS:
        raise onnxide.NotImplemented(f"Output type {dt.NAMES.get(code, code)} has no onnxruntime-web tensor type")
    return CODE_TO_JS[code]


@_clean
async def download_value(vid):
    """{type, dims, data} of a value kept on a device (Tensor.getData)."""
    if vid not in _values:
        raise onnxide.InvalidArgument("The GPU tensor was disposed")
    v = _values[vid]
    host = v.device.download(v._value)
    if inspect.isawaitable(host):
        host = await host
    t, dims, data = _to_wire(host, "")
    return _js({"type": t, "dims": dims, "data": data})


def gpu_buffer(vid):
    """The GPUBuffer holding a value kept on the page's WebGPU device (Tensor.gpuBuffer), or None."""
    v = _values.get(vid)
    return v._value.buf.gpu if v is not None and v.device.type == "webgpu" else None


@_clean
def release_value(vid):
    """Give a kept device value back to its device (Tensor.dispose)."""
    v = _values.pop(vid, None)
    if v is not None:
        v.device.release(v._value)
    return _js({"released": v is not None})


@_clean
def release(sid):
    entry = _sessions.pop(sid, None)
    if entry is not None:
        shutil.rmtree(entry[1], ignore_errors=True)
    return _js({"released": entry is not None})
