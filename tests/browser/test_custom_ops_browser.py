"""Custom ops in Chromium: (a) a Python custom op (onnxide.extensions.@onnx_op) declared and run inside Pyodide, and
(b) a JS custom op given through the JS API's `customOps` option (its kernel runs in the page, the session in the
Worker or the page), each compared with numpy computed here; the error paths in onnxruntime-web's form."""
import json

import numpy as np
import pytest
from onnx import TensorProto as TP, helper

CONTRIB = "ai.onnx.contrib"


def _model(nodes, inputs, outputs, values=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs],
                          value_info=[helper.make_tensor_value_info(*v) for v in values])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(CONTRIB, 1)])
    return list(m.SerializeToString())


def _scaled_model():
    """x -> Relu -> ai.onnx.contrib:ScaledTanh(alpha=1.5) -> Add(x): ONNX ops (the WASM EP's) around the custom op;
    the custom op's output declared [2, 3]."""
    return _model([helper.make_node("Relu", ["x"], ["r"]),
                   helper.make_node("ScaledTanh", ["r"], ["t"], domain=CONTRIB, name="st", alpha=1.5),
                   helper.make_node("Add", ["t", "x"], ["y"])], [("x", TP.FLOAT, [2, 3])], [("y", TP.FLOAT, [2, 3])],
                  [("t", TP.FLOAT, [2, 3])])


X = np.array([[-1.0, 0.25, 0.5], [1.0, -2.0, 3.0]], np.float32)
WANT = np.tanh(np.maximum(X, 0)) * 1.5 + X


def test_python_custom_op_in_pyodide(plain_pyodide):
    """@onnx_op in Pyodide (the JupyterLite / PyScript path): the library flow, a shape function, and a wrong result
    caught with the node and op named."""
    got = plain_pyodide.evaluate("""async (model) => {
        await pyodide.loadPackage('micropip');
        await pyodide.pyimport('micropip').install(window.wheelURL);
        pyodide.globals.set('model_bytes', new Uint8Array(model));
        return pyodide.runPython(`
import json, numpy as np, onnxide as ort
from onnxide.extensions import onnx_op, PyCustomOpDef as D, get_library_path

@onnx_op(op_type="ScaledTanh", inputs=[D.dt_float], outputs=[D.dt_float], attrs={"alpha": D.dt_float},
         shape_fn=lambda s, alpha=1.0: [s])
def scaled_tanh(x, alpha=1.0):
    return np.tanh(x) * np.float32(alpha)

so = ort.SessionOptions()
so.register_custom_ops_library(get_library_path())
model = model_bytes.to_bytes()
sess = ort.InferenceSession(model, so)
x = np.array([[-1.0, 0.25, 0.5], [1.0, -2.0, 3.0]], np.float32)
y = sess.run(None, {"x": x})[0]
bad = ort.SessionOptions()
bad.register_custom_op(lambda x, alpha=1.0: x.astype(np.float64), op_type="ScaledTanh", attrs={"alpha": D.dt_float})
try:
    ort.InferenceSession(model, bad).run(None, {"x": x})
    error = None
except ort.capi.onnxruntime_pybind11_state.RuntimeException as e:
    error = str(e)
json.dumps({"y": y.tolist(), "dtype": str(y.dtype), "providers": sess.get_providers(), "error": error})
`);
    }""", _scaled_model())
    r = json.loads(got)
    assert r["dtype"] == "float32" and r["providers"][-1] == "CPUExecutionProvider"
    np.testing.assert_allclose(np.array(r["y"], np.float32), WANT, rtol=1e-6, atol=1e-6)
    assert r["error"] == ("Non-zero status code returned while running ScaledTanh node. Name:'st' Status Message: "
                          "custom op ai.onnx.contrib:ScaledTanh output 0 ('t') is tensor(double), declared "
                          "tensor(float)")


pytestmark_js = pytest.mark.parametrize("api_page", ["worker", "page"], indirect=True)


def js(page, body, arg=None):
    """Run an async JS function body with `ort` and `arg` in scope; returns its JSON-able result."""
    return page.evaluate(f"async (arg) => {{ const ort = window.ort; {body} }}", arg)


@pytestmark_js
def test_js_custom_op_through_the_js_api(api_page):
    """customOps: a kernel taking and returning ort.Tensors, with attributes, run on the 'wasm' backend (the WASM EP
    in front: the custom node goes to the CPU EP); the kernel runs in the page, closures and all."""
    got = js(api_page, """
        let calls = 0;  // page state the kernel closes over
        const scaledTanh = (inputs, attrs) => {
          calls++;
          const [x] = inputs;
          if (!(x instanceof ort.Tensor)) throw new Error('not a Tensor');
          return new ort.Tensor('float32', x.data.map((v) => Math.tanh(v) * attrs.alpha), x.dims);
        };
        const s = await ort.InferenceSession.create(new Uint8Array(arg.model), {executionProviders: ['wasm'],
          customOps: {'ai.onnx.contrib': {ScaledTanh: {kernel: scaledTanh, inputs: ['float32'], outputs: ['float32'],
                                                        attributes: {alpha: 'float'}}}}});
        const x = new ort.Tensor('float32', Float32Array.from(arg.x), [2, 3]);
        const a = await s.run({x});
        const b = await s.run({x});
        await s.release();
        return {y: Array.from(a.y.data), same: Array.from(b.y.data), dims: a.y.dims, type: a.y.type, calls,
                providers: s.providers};""", {"model": _scaled_model(), "x": X.ravel().tolist()})
    assert got["type"] == "float32" and got["dims"] == [2, 3] and got["calls"] == 2
    assert got["providers"][-1] == "CPUExecutionProvider"
    np.testing.assert_allclose(np.array(got["y"], np.float32).reshape(2, 3), WANT, rtol=1e-6, atol=1e-6)
    assert got["same"] == got["y"]


@pytestmark_js
def test_js_custom_op_two_outputs_async_kernel(api_page):
    """A bare async function (no declaration: the model's types and shapes are the checks) with two outputs."""
    model = _model([helper.make_node("MinMax", ["a", "b"], ["lo", "hi"], domain=CONTRIB)],
                   [("a", TP.INT32, [4]), ("b", TP.INT32, [4])], [("lo", TP.INT32, [4]), ("hi", TP.INT32, [4])])
    got = js(api_page, """
        const minMax = async ([a, b]) => {
          await new Promise((r) => setTimeout(r, 1));
          return [new ort.Tensor('int32', a.data.map((v, i) => Math.min(v, b.data[i])), a.dims),
                  new ort.Tensor('int32', a.data.map((v, i) => Math.max(v, b.data[i])), a.dims)];
        };
        const s = await ort.InferenceSession.create(new Uint8Array(arg.model),
          {customOps: {'ai.onnx.contrib': {MinMax: minMax}}});
        const out = await s.run({a: new ort.Tensor('int32', Int32Array.from(arg.a), [4]),
                                 b: new ort.Tensor('int32', Int32Array.from(arg.b), [4])});
        await s.release();
        return {lo: Array.from(out.lo.data), hi: Array.from(out.hi.data)};""",
             {"model": model, "a": [3, -1, 7, 0], "b": [2, 5, 7, -4]})
    a, b = np.array([3, -1, 7, 0]), np.array([2, 5, 7, -4])
    assert got == {"lo": np.minimum(a, b).tolist(), "hi": np.maximum(a, b).tolist()}


@pytestmark_js
def test_js_custom_op_errors_in_onnxruntime_webs_form(api_page):
    """Missing kernel, bad customOps, wrong output type / shape, a non-Tensor result, a throwing kernel: each
    rejects with onnxruntime-web's prefix and the op named; the host keeps working."""
    got = js(api_page, """
        const model = new Uint8Array(arg.model);
        const x = new ort.Tensor('float32', Float32Array.from(arg.x), [2, 3]);
        const r = {};
        const attempt = async (key, kernel, declared = {}) => {
          try {
            const s = await ort.InferenceSession.create(model, kernel === undefined ? {} :
              {customOps: {'ai.onnx.contrib': {ScaledTanh: {kernel, ...declared}}}});
            await s.run({x});
            r[key] = 'resolved';
          } catch (e) { r[key] = `${e.name}: ${e.message}`; }
        };
        await attempt('missing', undefined);
        try { await ort.InferenceSession.create(model, {customOps: {'ai.onnx.contrib': {ScaledTanh: 3}}}); }
        catch (e) { r.notAFunction = `${e.name}: ${e.message}`; }
        await attempt('type', ([t]) => new ort.Tensor('int32', new Int32Array(t.size), t.dims),
                      {outputs: ['float32']});
        await attempt('shape', ([t]) => new ort.Tensor('float32', new Float32Array(6), [6]));
        await attempt('notTensor', () => 42);
        await attempt('throws', () => { throw new Error('kernel says no'); });
        await attempt('ok', ([t], {alpha}) => new ort.Tensor('float32', t.data.map((v) => Math.tanh(v) * alpha), t.dims));
        return r;""", {"model": _scaled_model(), "x": X.ravel().tolist()})
    run = "Error: failed to call OrtRun(). ERROR_CODE: 6, ERROR_MESSAGE: Non-zero status code returned while running " \
          "ScaledTanh node. Name:'st' Status Message: custom op ai.onnx.contrib:ScaledTanh"
    assert got["missing"] == ("Error: Can't create a session. ERROR_CODE: 1, ERROR_MESSAGE: Fatal error: "
                              "ai.onnx.contrib:ScaledTanh(-1) is not a registered function/op")
    assert got["notAFunction"] == ("TypeError: customOps['ai.onnx.contrib'].ScaledTanh must be a function or "
                                   "{kernel: function, inputs, outputs, attributes}.")
    assert got["type"] == run + " output 0 ('t') is tensor(int32), declared tensor(float)"
    assert got["shape"] == run + " output 0 ('t') has shape [6], expected [2, 3] (declared in the model)"
    assert got["notTensor"] == run + (": the kernel's output 0 is number, not a Tensor (it returns a Tensor or an "
                                      "array of Tensors)")
    assert got["throws"] == run + ": kernel says no"
    assert got["ok"] == "resolved"
