"""onnxide's onnxruntime-web-compatible JS API in headless Chromium, with Pyodide in a Worker and in the page:
sessions from URLs and bytes, every tensor type, fetches, external data with progress, real models vs native,
bad input rejected with onnxruntime-web's messages (and the host still alive afterwards)."""
import os

import numpy as np
import pytest

import onnxide
from js_api_models import JS_TYPES, ext_weight, write_all

pytestmark = pytest.mark.parametrize("api_page", ["worker", "page"], indirect=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = "../../../build/web/models/"


@pytest.fixture(scope="module")
def test_models(scratch):
    write_all(str(scratch / "models"))
    return "/_scratch/models/"


def js(page, body, arg=None):
    """Run an async JS function body with `ort` and `arg` in scope; returns its JSON-able result."""
    return page.evaluate(f"async (arg) => {{ const ort = window.ort; {body} }}", arg)


def test_host_mode_and_versions(api_page):
    info = js(api_page, "const h = await ort.getHost(); return {mode: h.mode, info: h.info, v: ort.env.versions};")
    assert info["mode"] == ("worker" if "host=worker" in api_page.url else "page")
    assert info["info"]["pyodideVersion"] == "0.27.7" and info["info"]["numpy"] == "2.0.2"
    assert info["v"]["onnxide"] == onnxide.__version__
    assert "CPUExecutionProvider" in info["info"]["providers"]
    assert info["info"]["timings"]["pyodideMs"] > 0
    assert info["info"]["timings"]["boot"] == "snapshot"  # (web/host.mjs's fast boot, from setup_web.sh's assets)


def test_default_cnn_matches_native(api_page):
    from onnxide.demo import default_input, default_model_bytes
    x = default_input()
    got = js(api_page, f"""
        const s = await ort.InferenceSession.create('{MODELS}default_cnn.onnx', {{executionProviders: ['wasm']}});
        const x = new ort.Tensor('float32', Float32Array.from(arg), [1, 3, 64, 64]);
        const out = await s.run({{image: x}});
        const r = {{inputs: s.inputNames, outputs: s.outputNames, meta: s.inputMetadata, type: out.probs.type,
                   dims: out.probs.dims, data: Array.from(out.probs.data), isTensor: out.probs instanceof ort.Tensor}};
        await s.release();
        return r;""", x.ravel().tolist())
    assert got["inputs"] == ["image"] and got["outputs"] == ["probs"]
    assert got["meta"][0] == {"name": "image", "isTensor": True, "type": "float32", "shape": ["batch", 3, 64, 64]}
    assert got["type"] == "float32" and got["dims"] == [1, 10] and got["isTensor"]
    want = onnxide.InferenceSession(default_model_bytes()).run(None, {"image": x})[0]
    np.testing.assert_allclose(np.array(got["data"], np.float32).reshape(1, 10), want, rtol=1e-5, atol=1e-6)


def test_silero_vad_matches_native(api_page):
    """A real pretrained model (silero-vad 6.2.3, If + LSTM) streaming 8 chunks: same outputs as natively."""
    rng = np.random.default_rng(3)
    chunks = (rng.standard_normal((8, 576)) * 0.1).astype(np.float32)
    got = js(api_page, f"""
        const s = await ort.InferenceSession.create('{MODELS}silero_vad.onnx');
        let state = new ort.Tensor('float32', new Float32Array(256), [2, 1, 128]);
        const sr = new ort.Tensor('int64', [16000n], []);
        const probs = [];
        for (const c of arg) {{
          const out = await s.run({{input: new ort.Tensor('float32', Float32Array.from(c), [1, 576]), state, sr}});
          probs.push(out.output.data[0]);
          state = out.stateN;
        }}
        await s.release();
        return {{probs, state: Array.from(state.data)}};""", chunks.tolist())
    sess = onnxide.InferenceSession(os.path.join(ROOT, "build", "web", "models", "silero_vad.onnx"))
    state, probs = np.zeros((2, 1, 128), np.float32), []
    for c in chunks:
        p, state = sess.run(None, {"input": c[None], "state": state, "sr": np.array(16000, np.int64)})
        probs.append(float(p[0, 0]))
    np.testing.assert_allclose(got["probs"], probs, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.array(got["state"]).reshape(2, 1, 128), state, rtol=1e-4, atol=1e-5)


def test_every_tensor_type_round_trips(api_page, test_models):
    got = js(api_page, f"""
        const s = await ort.InferenceSession.create('{test_models}alltypes.onnx');
        const vals = {{float32: [1.5, -2, 3.25, 0, 1e-3, 7], float64: [1e-300, -2.5, 3, 0, 1, 2],
          float16: [0.5, -2, 65504, 0, 1, -0.25], int8: [-128, 127, 0, 1, -1, 5], uint8: [0, 255, 1, 2, 3, 4],
          int16: [-32768, 32767, 0, 1, -1, 2], uint16: [0, 65535, 1, 2, 3, 4],
          int32: [-2147483648, 2147483647, 0, 1, -1, 2], uint32: [0, 4294967295, 1, 2, 3, 4],
          int64: [-(2n ** 63n), 2n ** 63n - 1n, 0n, 1n, -1n, 9007199254740993n],
          uint64: [0n, 2n ** 64n - 1n, 1n, 2n, 3n, 4n], bool: [true, false, true, true, false, false],
          string: ['a', '', 'héllo', 'x y', '☃', 'z']}};
        const feeds = {{}};
        for (const [t, v] of Object.entries(vals)) feeds['x_' + t] = new ort.Tensor(t, v, [2, 3]);
        const out = await s.run(feeds);
        const r = {{}};
        for (const [t, v] of Object.entries(vals)) {{
          const o = out['y_' + t];
          r[t] = {{type: o.type, dims: o.dims, ctor: o.data.constructor.name,
                   data: Array.from(o.data, (x) => typeof x === 'bigint' ? x.toString() : x)}};
        }}
        return r;""")
    assert set(got) == set(JS_TYPES)
    for t, r in got.items():
        assert r["type"] == t and r["dims"] == [2, 3], t
    assert got["int64"]["data"] == [str(-2**63), str(2**63 - 1), "0", "1", "-1", "9007199254740993"]
    assert got["uint64"]["data"][1] == str(2**64 - 1)
    assert got["bool"]["data"] == [1, 0, 1, 1, 0, 0] and got["bool"]["ctor"] == "Uint8Array"
    assert got["string"]["data"] == ["a", "", "héllo", "x y", "☃", "z"]
    assert got["float16"]["data"][:3] in ([0.5, -2, 65504], [0x3800, 0xC000, 0x7BFF])  # Float16Array or bits
    assert got["float32"]["data"] == [1.5, -2, 3.25, 0, np.float32(1e-3).item(), 7]
    assert got["int32"]["data"][:2] == [-2147483648, 2147483647]
    assert got["uint32"]["data"][1] == 4294967295


def test_4bit_tensors(api_page, test_models):
    got = js(api_page, f"""
        const s = await ort.InferenceSession.create('{test_models}int4.onnx');
        // 6 values packed two per byte, low nibble first: int4 [1,-2,7,-8,0,3], uint4 [1,2,15,0,9,4]
        // Uint8Array as onnxruntime-web requires for int4 (it rejects an Int8Array)
        const i4 = new ort.Tensor('int4', new Uint8Array([0xe1, 0x87, 0x30]), [2, 3]);
        const u4 = new ort.Tensor('uint4', new Uint8Array([0x21, 0x0f, 0x49]), [2, 3]);
        const out = await s.run({{x_int4: i4, x_uint4: u4}});
        return {{i: Array.from(out.y_int4.data), u: Array.from(out.y_uint4.data), t: out.y_int4.type}};""")
    assert got["t"] == "int4" and got["i"] == [0xe1, 0x87, 0x30] and got["u"] == [0x21, 0x0f, 0x49]


def test_fetches_subset(api_page, test_models):
    got = js(api_page, f"""
        const s = await ort.InferenceSession.create('{test_models}alltypes.onnx');
        const feeds = {{}};
        for (const n of s.inputNames) {{
          const t = n.slice(2);
          feeds[n] = t === 'string' ? new ort.Tensor('string', ['a','b','c'], [1, 3])
            : new ort.Tensor(t, t.endsWith('64') && t.includes('int') ? [1n, 2n, 3n] : [1, 0, 1], [1, 3]);
        }}
        const a = await s.run(feeds, ['y_int32', 'y_bool']);
        const b = await s.run(feeds, {{y_float32: null}});
        return {{a: Object.keys(a).sort(), b: Object.keys(b)}};""")
    assert got == {"a": ["y_bool", "y_int32"], "b": ["y_float32"]}


def test_external_data_with_progress(api_page, test_models):
    got = js(api_page, f"""
        const events = [];
        const s = await ort.InferenceSession.create('{test_models}ext/matmul.onnx',
          {{onProgress: (loaded, total, url) => events.push([loaded, total, url.split('/').pop()])}});
        const x = new ort.Tensor('float32', [1, 0, 0, 0, 0, 0, 0, 1], [2, 4]);
        const y1 = Array.from((await s.run({{x}})).y.data);
        // explicit externalData from bytes, model from bytes
        const mb = new Uint8Array(await (await fetch('{test_models}ext/matmul.onnx')).arrayBuffer());
        const wb = new Uint8Array(await (await fetch('{test_models}ext/matmul.weights')).arrayBuffer());
        const s2 = await ort.InferenceSession.create(mb, {{externalData: [{{path: 'matmul.weights', data: wb}}]}});
        const y2 = Array.from((await s2.run({{x}})).y.data);
        let missing = null;
        try {{ await ort.InferenceSession.create(mb); }} catch (e) {{ missing = e.message; }}
        return {{y1, y2, events, missing, bytesIntact: mb.length > 0}};""")
    w = ext_weight()
    want = np.concatenate([w[0], w[3]]).tolist()
    np.testing.assert_allclose(got["y1"], want, rtol=1e-6)
    np.testing.assert_allclose(got["y2"], want, rtol=1e-6)
    files = {e[2] for e in got["events"]}
    assert files == {"matmul.onnx", "matmul.weights"}
    last = [e for e in got["events"] if e[2] == "matmul.weights"][-1]
    assert last[0] == 48 and last[1] in (48, None)
    assert got["missing"] and "matmul.weights" in got["missing"]
    assert got["bytesIntact"], "the caller's model bytes must not be detached"


def test_bad_input_rejects_as_onnxruntime_web_does(api_page, test_models):
    got = js(api_page, f"""
        const r = {{}};
        const grab = async (k, f) => {{ try {{ await f(); r[k] = 'resolved'; }} catch (e) {{ r[k] = e.message; }} }};
        await grab('404', () => ort.InferenceSession.create('{test_models}no-such-model.onnx'));
        await grab('corrupt', () => ort.InferenceSession.create(new Uint8Array([8, 1, 18, 200, 1, 0, 0])));
        await grab('empty', () => ort.InferenceSession.create(new Uint8Array(0)));
        await grab('notonnx', () => ort.InferenceSession.create(new TextEncoder().encode('<html>not a model</html>')));
        const s = await ort.InferenceSession.create('{MODELS}default_cnn.onnx');
        const good = new ort.Tensor('float32', new Float32Array(3 * 64 * 64), [1, 3, 64, 64]);
        await grab('name', () => s.run({{img: good}}));
        const t = (type, C, n, dims) => new ort.Tensor(type, new C(n), dims);
        await grab('dtype', () => s.run({{image: t('int32', Int32Array, 3 * 64 * 64, [1, 3, 64, 64])}}));
        await grab('shape', () => s.run({{image: t('float32', Float32Array, 3 * 32 * 32, [1, 3, 32, 32])}}));
        await grab('rank', () => s.run({{image: new ort.Tensor('float32', new Float32Array(12), [12])}}));
        await grab('fetch', () => s.run({{image: good}}, ['nope']));
        await grab('notTensor', () => s.run({{image: [1, 2, 3]}}));
        r.after = Array.from((await s.run({{image: good}})).probs.dims);  // the host survived all of it
        await s.release();
        await grab('released', () => s.run({{image: good}}));
        try {{ new ort.Tensor('float32', [1, 2, 3], [2, 2]); }} catch (e) {{ r.size = e.message; }}
        return r;""")
    # onnxruntime-web's forms (tests/browser/test_parity.py compares the exact texts with it side by side)
    assert got["404"] == f"failed to load external data file: {test_models}no-such-model.onnx"
    for k in ("corrupt", "empty", "notonnx"):
        assert got[k].startswith("Can't create a session. ERROR_CODE: "), (k, got[k])
    assert got["name"] == "input 'image' is missing in 'feeds'."
    run_failed = "failed to call OrtRun(). ERROR_CODE: 2, ERROR_MESSAGE: "
    assert got["dtype"].startswith(run_failed) and "data type" in got["dtype"]
    assert got["shape"].startswith(run_failed) and "dimensions" in got["shape"]
    assert got["rank"].startswith(run_failed) and "rank" in got["rank"]
    assert got["fetch"] == "'fetches' contains invalid output name: nope."
    assert got["notTensor"] == 'invalid data location: undefined for input "image"'
    assert got["after"] == [1, 10]
    assert got["released"].startswith("cannot run inference. invalid session id: ")
    assert got["size"] == "Tensor's size(4) does not match data length(3)."


def test_worker_keeps_the_page_responsive(api_page):
    """With the Worker host the page's event loop keeps turning while a model runs; in-page it cannot."""
    got = js(api_page, f"""
        const s = await ort.InferenceSession.create('{MODELS}default_cnn.onnx');
        const x = new ort.Tensor('float32', new Float32Array(4 * 3 * 64 * 64).fill(0.5), [4, 3, 64, 64]);
        await s.run({{image: x}});
        let ticks = 0;
        const timer = setInterval(() => ticks++, 2);
        const t0 = performance.now();
        for (let i = 0; i < 3; i++) await s.run({{image: x}});
        const ms = performance.now() - t0;
        clearInterval(timer);
        await s.release();
        return {{ticks, ms, mode: (await ort.getHost()).mode}};""")
    if got["mode"] == "worker":
        assert got["ticks"] >= got["ms"] / 2 / 10, got  # at least a tenth of the 2 ms ticks while running
    else:
        assert got["ticks"] <= 6, got  # only between runs


def test_wasm_execution_provider_in_page(api_page):
    """The WASM EP's kernels ship in build/web/wasm/ (when .ci/setup_wasm.sh built them): 'wasm' and 'cpu' select it
    (both name onnxruntime-web's WebAssembly backend); onnxide's own 'CPUExecutionProvider' is the numpy EP alone."""
    import json
    with open(os.path.join(ROOT, "build", "web", "manifest.json")) as f:
        if not json.load(f).get("wasmKernels"):
            pytest.skip("no WASM kernel builds in build/web/ (run .ci/setup_wasm.sh before .ci/setup_web.sh)")
    from onnxide.demo import default_input, default_model_bytes
    x = default_input()
    got = js(api_page, f"""
        const r = {{}};
        for (const ep of ['wasm', 'cpu', 'CPUExecutionProvider']) {{
          const s = await ort.InferenceSession.create('{MODELS}default_cnn.onnx', {{executionProviders: [ep]}});
          const out = await s.run({{image: new ort.Tensor('float32', Float32Array.from(arg), [1, 3, 64, 64])}});
          r[ep] = {{providers: s.providers, probs: Array.from(out.probs.data)}};
          await s.release();
        }}
        return r;""", x.ravel().tolist())
    assert got["wasm"]["providers"] == ["WasmExecutionProvider", "CPUExecutionProvider"]
    assert got["cpu"]["providers"] == ["WasmExecutionProvider", "CPUExecutionProvider"]
    assert got["CPUExecutionProvider"]["providers"] == ["CPUExecutionProvider"]
    want = onnxide.InferenceSession(default_model_bytes()).run(None, {"image": x})[0].ravel()
    np.testing.assert_allclose(got["wasm"]["probs"], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["cpu"]["probs"], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["CPUExecutionProvider"]["probs"], want, rtol=1e-5, atol=1e-6)


def _mul_add_model():
    from onnx import TensorProto, helper, numpy_helper
    g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "x"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                          [numpy_helper.from_array(np.full(3, 2, np.float32), "w")])
    return list(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def test_gpu_buffer_outputs_need_a_device_ep(api_page):
    got = js(api_page, """
        try {
          await ort.InferenceSession.create(new Uint8Array(arg), {preferredOutputLocation: 'gpu-buffer'});
          return 'created';
        } catch (e) { return e.message; }""", _mul_add_model())
    assert "preferredOutputLocation 'gpu-buffer' needs a GPU execution provider" in got


def test_outputs_stay_on_the_device_between_runs(api_page):
    """The JS API runs through the async path; with a device EP (the mock device of tests/device/, installed into
    the page's Pyodide) and preferredOutputLocation 'gpu-buffer', outputs stay on the device as Tensors with
    location 'gpu-buffer', feed the next run without a transfer, and come to the CPU on getData()."""
    if "host=page" not in api_page.url:
        pytest.skip("the mock device is installed through the page host's Pyodide")
    with open(os.path.join(ROOT, "tests", "device", "mock_device.py")) as f:
        src = f.read()
    got = js(api_page, """
        const py = (await ort.getHost()).host.pyodide;
        py.FS.writeFile('/home/pyodide/mock_device.py', arg.src);
        py.runPython("import sys; sys.path.insert(0, '/home/pyodide'); import mock_device; d = mock_device.install()");
        // a provider name onnxruntime-web does not know is a backend the app registers (here: onnxide's, again)
        ort.registerBackend('MockDeviceExecutionProvider', ort.onnxideBackend, -1);
        const count = () => py.runPython("[d.uploads, d.downloads, d.live_buffers()]").toJs();
        const s = await ort.InferenceSession.create(new Uint8Array(arg.model), {
          executionProviders: ['MockDeviceExecutionProvider'], preferredOutputLocation: 'gpu-buffer'});
        const x = new ort.Tensor('float32', Float32Array.from([1, 2, 3]), [1, 3]);
        const y1 = (await s.run({x})).y;
        let dataError = '';
        try { y1.data; } catch (e) { dataError = e.message; }
        const afterFirst = count();
        const y2 = (await s.run({x: y1})).y;  // the device value fed back
        const afterSecond = count();
        const where = [y1.location, y1.dataLocation, y2.location];
        const first = Array.from(await y1.getData());
        await y1.dispose();
        const second = Array.from(await y2.getData(true));
        const end = {count: count(), location: y2.location, data: Array.from(y2.data)};
        await s.release();
        return {where, dataError, afterFirst, afterSecond, first, second, end};""",
        {"src": src, "model": _mul_add_model()})
    assert got["where"] == ["gpu-buffer", "gpu-buffer", "gpu-buffer"]
    assert "not on CPU" in got["dataError"]
    assert got["afterFirst"] == [1, 0, 2]  # x uploaded; y1 kept (the weight and y1 alive)
    assert got["afterSecond"] == [1, 0, 3]  # y1 fed back: no upload, no readback
    np.testing.assert_array_equal(got["first"], [3, 6, 9])
    np.testing.assert_array_equal(got["second"], [9, 18, 27])
    assert got["end"]["count"] == [1, 2, 1] and got["end"]["location"] == "cpu"  # only the weight left
    np.testing.assert_array_equal(got["end"]["data"], [9, 18, 27])


def _gpu_model():
    """Add + Relu + Transpose, and a Loop whose carried value stays on the GPU."""
    from onnx import TensorProto, helper
    F = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["h", "t"], ["h2"]), helper.make_node("Identity", ["c"], ["c2"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", F, [3, 2])],
        [helper.make_tensor_value_info("c2", TensorProto.BOOL, []), helper.make_tensor_value_info("h2", F, [3, 2])])
    nodes = [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
             helper.make_node("Loop", ["n", "", "t"], ["out"], body=body)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3]),
                                       helper.make_tensor_value_info("y", F, [3])],
                          [helper.make_tensor_value_info("out", F, [3, 2])],
                          [helper.make_tensor("n", TensorProto.INT64, [], [3])])
    return list(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def test_webgpu_execution_provider_in_the_browser(api_page):
    """executionProviders: ['webgpu'] runs the WGSL kernels on the page's (or the Worker's) navigator.gpu —
    SwiftShader here — through the async run path; outputs kept there with preferredOutputLocation feed the next
    run without a transfer."""
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    y = np.array([0.5, -1, 2], np.float32)
    got = js(api_page, """
        if (!globalThis.navigator?.gpu) return {skip: 'no navigator.gpu'};
        const s = await ort.InferenceSession.create(new Uint8Array(arg.model), {executionProviders: ['webgpu']});
        const feeds = {x: new ort.Tensor('float32', Float32Array.from(arg.x), [2, 3]),
                       y: new ort.Tensor('float32', Float32Array.from(arg.y), [3])};
        const out = (await s.run(feeds)).out;
        const kept = await ort.InferenceSession.create(new Uint8Array(arg.model),
          {executionProviders: ['webgpu'], preferredOutputLocation: 'gpu-buffer'});
        const k = (await kept.run(feeds)).out;
        const r = {providers: s.providers, out: Array.from(out.data), dims: out.dims, location: k.location,
                   kept: Array.from(await k.getData())};
        await s.release(); await kept.release();
        return r;""", {"model": _gpu_model(), "x": x.ravel().tolist(), "y": y.tolist()})
    if "skip" in got:
        pytest.skip(got["skip"])
    assert got["providers"] == ["WebGpuExecutionProvider", "CPUExecutionProvider"]
    want = (np.maximum(x + y, 0).T * 4).ravel()  # t plus three Loop iterations adding t
    np.testing.assert_allclose(got["out"], want, rtol=1e-6)
    assert got["dims"] == [3, 2] and got["location"] == "gpu-buffer"
    np.testing.assert_allclose(got["kept"], want, rtol=1e-6)


def test_gpu_buffers_in_and_out_of_the_page_host(api_page):
    """In the page host: an output kept on the WebGPU device exposes its GPUBuffer (tensor.gpuBuffer), and a
    GPUBuffer made on env.webgpu.device feeds a run as Tensor.fromGpuBuffer — read in place by the GPU kernels."""
    if "host=page" not in api_page.url:
        pytest.skip("GPUBuffers stay in the realm of the device that made them (the Worker host keeps its own)")
    got = js(api_page, """
        if (!globalThis.navigator?.gpu) return {skip: 'no navigator.gpu'};
        const s = await ort.InferenceSession.create(new Uint8Array(arg.model),
          {executionProviders: ['webgpu'], preferredOutputLocation: 'gpu-buffer'});
        const device = ort.env.webgpu.device;
        const buf = device.createBuffer({size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC |
                                                           GPUBufferUsage.COPY_DST});
        device.queue.writeBuffer(buf, 0, new Float32Array([1, -2, 3, -4]));
        const x = ort.Tensor.fromGpuBuffer(buf, {dataType: 'float32', dims: [2, 2]});
        const y = (await s.run({x})).y;
        const isBuffer = y.gpuBuffer instanceof GPUBuffer;
        const data = Array.from(await y.getData());
        await s.release();
        return {isBuffer, data};""", {"model": _relu_model()})
    if "skip" in got:
        pytest.skip(got["skip"])
    assert got["isBuffer"] and got["data"] == [1, 0, 3, 0]


def _relu_model():
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    return list(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
