"""onnxide's JS API against the real onnxruntime-web 1.31.1 in one Chromium page (tests/browser/pages/parity.html):
every check runs the same script on both libraries and compares what each returns or throws, so the expected value
is always onnxruntime-web's own (error texts, rank-0 leniency, backend names, env, Tensor rules, image conversions)."""
import json
import os
import re

import pytest
from onnx import TensorProto, helper

from conftest import open_page

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = "../../../build/web/models/"


def _rank0_model():
    """y = x * float(sr): `sr` declared rank 0 (as silero VAD's sample rate), `x` of any length."""
    g = helper.make_graph(
        [helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["x", "srf"], ["y"])],
        "rank0", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"]),
                  helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def parity(browser, server, scratch):
    if not os.path.isfile(os.path.join(ROOT, "build", "web", "ort", "ort.wasm.min.mjs")):
        pytest.fail("build/web/ort/ (onnxruntime-web) is missing: run bash .ci/setup_web.sh")
    folder = scratch / "parity"
    folder.mkdir(exist_ok=True)
    (folder / "rank0.onnx").write_bytes(_rank0_model().SerializeToString())
    page = open_page(browser, f"{server.url}tests/browser/pages/parity.html", "() => window.ortReady")
    yield page
    page.close()


def both(page, body, arg=None):
    """(onnxide's, onnxruntime-web's) result of an async JS body run with `ort` bound to each library in turn."""
    fn = f"async ([which, arg]) => {{ const ort = window[which]; {body} }}"
    return page.evaluate(fn, ["ort", arg]), page.evaluate(fn, ["ortWeb", arg])


def same(page, body, arg=None, engine_text=()):
    """Both libraries' results, asserted equal; for the keys in `engine_text` (messages onnxide keeps on one line where
    onnxruntime breaks them into lines) only the part before ERROR_MESSAGE and the numbers in the message must agree."""
    mine, theirs = both(page, body, arg)
    for k in engine_text:
        a, b = mine.pop(k), theirs.pop(k)
        head = "ERROR_MESSAGE: "
        assert a.split(head)[0] == b.split(head)[0], (k, a, b)
        assert re.findall(r"\d+", a.split(head)[1]) == re.findall(r"\d+", b.split(head)[1]), (k, a, b)
    assert mine == theirs, "onnxide:\n" + json.dumps(mine, indent=1) + "\nonnxruntime-web:\n" + json.dumps(theirs, indent=1)
    return mine


GRAB = """const r = {};
const grab = async (k, f) => { try { const v = await f(); r[k] = v === undefined ? 'resolved' : v; }
                               catch (e) { r[k] = 'ERR ' + e.message; } };"""


def test_error_messages(parity):
    got = same(parity, GRAB + f"""
        await grab('404', () => ort.InferenceSession.create('/_scratch/parity/no-such-model.onnx').then(() => 0));
        await grab('corrupt', () => ort.InferenceSession.create(new Uint8Array([8, 1, 18, 200, 1, 0, 0])).then(() => 0));
        await grab('notonnx', () => ort.InferenceSession.create(new TextEncoder().encode('<html>no</html>')).then(() => 0));
        await grab('badArg', () => ort.InferenceSession.create(42));
        await grab('badOffset', () => ort.InferenceSession.create(new ArrayBuffer(8), 9));
        const s = await ort.InferenceSession.create('{MODELS}default_cnn.onnx');
        const good = new ort.Tensor('float32', new Float32Array(3 * 64 * 64), [1, 3, 64, 64]);
        const t = (type, C, n, dims) => new ort.Tensor(type, new C(n), dims);
        await grab('missing', () => s.run({{img: good}}));
        await grab('dtype', () => s.run({{image: t('int32', Int32Array, 3 * 64 * 64, [1, 3, 64, 64])}}));
        await grab('shape', () => s.run({{image: t('float32', Float32Array, 3 * 32 * 32, [1, 3, 32, 32])}}));
        await grab('rank', () => s.run({{image: new ort.Tensor('float32', new Float32Array(12), [12])}}));
        await grab('fetch', () => s.run({{image: good}}, ['nope']));
        await grab('emptyFetch', () => s.run({{image: good}}, []));
        await grab('nullFetch', () => s.run({{image: good}}, null));
        await grab('feedsArray', () => s.run([good]));
        await grab('notTensor', () => s.run({{image: [1, 2, 3]}}));
        await grab('ok', async () => Array.from((await s.run({{image: good}})).probs.dims));
        await s.release();
        await grab('released', async () => {{
          try {{ await s.run({{image: good}}); }} catch (e) {{ throw new Error(e.message.replace(/\\d+$/, 'N')); }}
        }});
        return r;""", engine_text=("shape",))
    assert got["missing"] == "ERR input 'image' is missing in 'feeds'." and got["ok"] == [1, 10]


def test_rank0_input_takes_a_one_element_tensor(parity):
    """onnxruntime accepts a shape-[1] tensor for a rank-0 declared input (@ricky0123/vad-web feeds sr that way)."""
    same(parity, GRAB + """
        const s = await ort.InferenceSession.create('/_scratch/parity/rank0.onnx');
        const x = new ort.Tensor('float32', Float32Array.from([1, 2, 3]), [3]);
        const run = async (sr) => { const y = (await s.run({x, sr})).y; return [Array.from(y.dims), Array.from(y.data)]; };
        await grab('scalar', () => run(new ort.Tensor('int64', [2n], [])));
        await grab('one', () => run(new ort.Tensor('int64', [3n], [1])));
        await grab('oneByOne', () => run(new ort.Tensor('int64', [4n], [1, 1])));
        r.meta = [s.inputMetadata, s.outputMetadata];
        await s.release();
        return r;""")


def test_dynamic_dims_in_metadata(parity, scratch):
    """A named dynamic dim reads as its name, an unnamed one as 4294967295 (onnxruntime-web's -1 as a uint32); an
    output declared without a shape (or with unknown dims) reads as shape inference finds it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", None, 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Shape", ["x"], ["z"])], "dyn",
                          [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                helper.make_tensor_value_info("z", TensorProto.INT64, [None])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (scratch / "parity" / "dyn.onnx").write_bytes(model.SerializeToString())
    got = same(parity, GRAB + """
        const s = await ort.InferenceSession.create('/_scratch/parity/dyn.onnx');
        r.meta = [s.inputMetadata, s.outputMetadata];
        r.dims = Array.from((await s.run({x: new ort.Tensor('float32', new Float32Array(6), [1, 2, 3])})).y.dims);
        await s.release();
        return r;""")
    assert got["meta"][0][0]["shape"] == got["meta"][1][0]["shape"] == ["n", 4294967295, 3]
    assert got["meta"][1][1]["shape"] == [3] and got["dims"] == [1, 2, 3]


def test_backend_names(parity):
    """'cpu' and 'wasm' are the WebAssembly backend; names the entry point lacks fail in onnxruntime-web's words."""
    same(parity, GRAB + f"""
        const open = (eps) => ort.InferenceSession.create('{MODELS}default_cnn.onnx', eps && {{executionProviders: eps}})
          .then(async (s) => {{ const names = s.inputNames; await s.release(); return names; }});
        for (const eps of [undefined, [], ['cpu'], ['wasm'], [{{name: 'wasm'}}], ['foo'], ['webgpu'], ['webnn'],
                           ['foo', 'wasm'], ['wasm', 'webgpu']]) {{
          await grab(JSON.stringify(eps), () => open(eps));
        }}
        return r;""")


def test_env(parity):
    """env.versions, logLevel's check, and env.wasm's flags as the wasm backend fills them on first use; the page set
    env.wasm.proxy = false, which leaves onnxide's Pyodide in its Worker."""
    assert parity.evaluate("async () => (await window.ort.getHost()).mode") == "worker"
    same(parity, GRAB + f"""
        r.versions = {{common: ort.env.versions.common, web: ort.env.versions.web}};
        r.logLevel = ort.env.logLevel;
        await grab('badLevel', () => {{ ort.env.logLevel = 'loud'; }});
        ort.env.logLevel = 'error';
        r.logLevel2 = ort.env.logLevel;
        ort.env.logLevel = 'warning';
        await grab('readOnlyWeb', () => {{ 'use strict'; ort.env.versions.web = 'x'; return ort.env.versions.web; }});
        const s = await ort.InferenceSession.create('{MODELS}default_cnn.onnx');
        await s.release();
        const w = ort.env.wasm;
        r.wasm = {{numThreads: w.numThreads, proxy: w.proxy, trace: w.trace, initTimeout: w.initTimeout,
                  simd: w.simd}};
        r.types = typeof ort.InferenceSession.create + typeof ort.Tensor + typeof ort.registerBackend
          + typeof ort.default + typeof ort.default?.InferenceSession;
        return r;""")


TENSOR_CASES = """
const cases = {
  f32list: () => new ort.Tensor('float32', [1, 2, 3, 4], [2, 2]),
  noDims: () => new ort.Tensor('float32', [1, 2, 3]),
  inferredF32: () => new ort.Tensor(new Float32Array([1, 2]), [1, 2]),
  inferredBool: () => new ort.Tensor([true, false, true]),
  inferredStr: () => new ort.Tensor(['a', 'b']),
  clamped: () => new ort.Tensor('uint8', new Uint8ClampedArray([1, 300, 3]), [3]),
  clampedInferred: () => new ort.Tensor(new Uint8ClampedArray([9, 8])),
  clampedWrong: () => new ort.Tensor('int8', new Uint8ClampedArray([1]), [1]),
  i64list: () => new ort.Tensor('int64', [1, 2], [2]),
  boolList: () => new ort.Tensor('bool', [1, 0, 1], [3]),
  wrongArray: () => new ort.Tensor('float32', new Int32Array(2), [2]),
  badType: () => new ort.Tensor('complex64', [1], [1]),
  size: () => new ort.Tensor('float32', [1, 2, 3], [2, 2]),
  negDim: () => new ort.Tensor('float32', [], [0, -1]),
  fracDim: () => new ort.Tensor('float32', [1, 2], [1.5]),
  dimsNotArray: () => new ort.Tensor('float32', [1, 2], 2),
  emptyInfer: () => new ort.Tensor([]),
  numberInfer: () => new ort.Tensor([1, 2]),
  strNotArray: () => new ort.Tensor('string', 'ab', [1]),
  scalar: () => new ort.Tensor('float32', [7], []),
  pinned: () => ort.Tensor.fromPinnedBuffer('float32', new Float32Array([1, 2])),
  pinnedWrong: () => ort.Tensor.fromPinnedBuffer('float32', new Int32Array([1, 2])),
  badLocation: () => new ort.Tensor({location: 'disk', type: 'float32', dims: [1]}),
};
const show = (t) => ({type: t.type, dims: Array.from(t.dims), size: t.size, location: t.location,
                      ctor: t.data?.constructor?.name, data: Array.from(t.data, (v) => typeof v === 'bigint' ? String(v) : v)});
for (const [k, f] of Object.entries(cases)) await grab(k, () => show(f()));
"""


def test_tensor_rules(parity):
    same(parity, GRAB + TENSOR_CASES + """
        const t = new ort.Tensor('float32', [1, 2, 3, 4, 5, 6], [2, 3]);
        t.dims[0] = 3; t.dims[1] = 2;  // dims is a plain mutable array there
        r.mutated = Array.from(t.dims);
        const u = t.reshape([6]);
        r.reshape = [Array.from(u.dims), u.data === t.data, u.size];
        await grab('reshapeBad', () => t.reshape([4]));
        r.getData = (await t.getData(true)) === t.data;
        t.dispose();
        r.disposed = t.location;
        await grab('afterDispose', () => t.data);
        await grab('getDataAfterDispose', () => t.getData());
        return r;""")


IMAGE = """
const W = 4, H = 3;
const px = new Uint8ClampedArray(W * H * 4).map((_, i) => (i * 37 + 11) % 256);
const img = new ImageData(px, W, H);
const data = (t) => [t.type, Array.from(t.dims), Array.from(t.data, (v) => Math.round(v * 1e5) / 1e5)];
"""


def test_images(parity):
    """Tensor.fromImage (ImageData, raw pixels with options, a canvas, an ImageBitmap, a URL, an <img>), toImageData and
    toDataURL."""
    same(parity, GRAB + IMAGE + """
        await grab('plain', async () => data(await ort.Tensor.fromImage(img)));
        await grab('rgb', async () => data(await ort.Tensor.fromImage(img, {tensorFormat: 'RGB'})));
        await grab('nhwc', async () => data(await ort.Tensor.fromImage(img, {tensorLayout: 'NHWC', tensorFormat: 'BGR'})));
        await grab('norm', async () => data(await ort.Tensor.fromImage(img, {norm: {mean: [1, 2, 3, 4], bias: [5, 6, 7, 8]}})));
        await grab('normScalar', async () => data(await ort.Tensor.fromImage(img, {norm: {mean: 255, bias: 0}})));
        await grab('resize', async () => data(await ort.Tensor.fromImage(img, {resizedWidth: 2, resizedHeight: 2})));
        await grab('rawNoSize', async () => data(await ort.Tensor.fromImage(px)));
        await grab('raw', async () => data(await ort.Tensor.fromImage(px, {width: W, height: H, dataType: 'float32'})));
        await grab('rawUint8', async () => data(await ort.Tensor.fromImage(px, {width: W, height: H, dataType: 'uint8'})));
        await grab('notImage', async () => data(await ort.Tensor.fromImage(42)));
        const canvas = document.createElement('canvas');
        canvas.width = W; canvas.height = H;
        canvas.getContext('2d').putImageData(img, 0, 0);
        await grab('canvas', async () => data(await ort.Tensor.fromImage(canvas, {tensorFormat: 'RGBA'})));
        await grab('bitmap', async () => data(await ort.Tensor.fromImage(await createImageBitmap(img))));
        const url = canvas.toDataURL();
        await grab('url', async () => data(await ort.Tensor.fromImage(url)));
        await grab('urlResized', async () => data(await ort.Tensor.fromImage(url, {resizedWidth: 2, resizedHeight: 5})));
        const el = new Image();
        el.src = url;
        await el.decode();
        await grab('imgElement', async () => data(await ort.Tensor.fromImage(el)));
        const t = await ort.Tensor.fromImage(img);
        await grab('toImageData', () => { const d = t.toImageData(); return [d.width, d.height, Array.from(d.data)]; });
        await grab('toImageDataNorm', () => {
          const d = t.toImageData({norm: {mean: 2, bias: 0.1}}); return [d.width, d.height, Array.from(d.data)]; });
        await grab('toDataURL', () => t.toDataURL().slice(0, 22));
        const rgb = await ort.Tensor.fromImage(img, {tensorFormat: 'RGB'});
        await grab('toImageDataRGB', () => { const d = rgb.toImageData(); return Array.from(d.data); });
        await grab('toImageDataBad', () => new ort.Tensor('float32', [1, 2, 3], [3]).toImageData());
        return r;""")


def test_fetches_and_preallocated_outputs(parity):
    same(parity, GRAB + f"""
        const s = await ort.InferenceSession.create('{MODELS}default_cnn.onnx');
        const good = new ort.Tensor('float32', new Float32Array(3 * 64 * 64).fill(0.25), [1, 3, 64, 64]);
        const round = (t) => Array.from(t.data, (v) => Math.round(v * 1e4) / 1e4);
        await grab('names', async () => Object.keys(await s.run({{image: good}}, ['probs'])));
        await grab('nullFetch', async () => Object.keys(await s.run({{image: good}}, {{probs: null}})));
        await grab('options', async () => Object.keys(await s.run({{image: good}}, {{logSeverityLevel: 2}})));
        const target = new ort.Tensor('float32', new Float32Array(10), [1, 10]);
        await grab('prealloc', async () => {{
          const out = await s.run({{image: good}}, {{probs: target}});
          // (onnxruntime-web 1.31.1 leaves a pre-allocated CPU tensor's data as it was; onnxide fills it)
          return [out.probs === target, Array.from(out.probs.dims)];
        }});
        await grab('preallocWrong', async () => {{
          const out = await s.run({{image: good}}, {{probs: new ort.Tensor('float32', new Float32Array(3), [3])}});
          return round(out.probs);
        }});
        await grab('preallocType', async () => {{
          const out = await s.run({{image: good}}, {{probs: new ort.Tensor('int32', new Int32Array(10), [1, 10])}});
          return round(out.probs);
        }});
        await s.release();
        return r;""")
