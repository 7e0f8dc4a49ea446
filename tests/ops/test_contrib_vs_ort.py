"""com.microsoft contrib ops: onnxide's CPU kernels against onnxruntime's CPU EP on small random models."""
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "py_engine"))
import onnxide  # noqa: E402

MS = "com.microsoft"
RNG = np.random.default_rng(1234)
_NP2ONNX = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.float16): TP.FLOAT16, np.dtype(np.float64): TP.DOUBLE,
            np.dtype(np.int64): TP.INT64, np.dtype(np.int32): TP.INT32, np.dtype(np.uint8): TP.UINT8,
            np.dtype(np.int8): TP.INT8, np.dtype(np.uint16): TP.UINT16, np.dtype(np.int16): TP.INT16,
            np.dtype(np.bool_): TP.BOOL}


def rand(*shape, dtype=np.float32, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def randint(lo, hi, *shape, dtype=np.uint8):
    return RNG.integers(lo, hi, size=shape, endpoint=False).astype(dtype)


def build(op_type, inputs, outputs, attrs=None, domain=MS, opset=21, initializers=None):
    """A one-node model. inputs: list of (name, array or None for an omitted optional input); outputs: list of
    (name, elem_type) with '' names for skipped optional outputs. Arrays in `initializers` become constants."""
    initializers = initializers or {}
    inputs = [(n, None if a is None else np.asarray(a)) for n, a in inputs]
    names = [n if a is not None else "" for n, a in inputs]
    node = helper.make_node(op_type, names, [n for n, _ in outputs], domain=domain, **(attrs or {}))
    g_inputs = [helper.make_tensor_value_info(n, _NP2ONNX[a.dtype], a.shape) for n, a in inputs
                if a is not None and n not in initializers]
    inits = [onnx.numpy_helper.from_array(a, n) for n, a in inputs if a is not None and n in initializers]
    g_outputs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs if n]
    graph = helper.make_graph([node], "g", g_inputs, g_outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 10
    feeds = {n: a for n, a in inputs if a is not None and n not in initializers}
    return model.SerializeToString(), feeds


def run_ort(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def run_ide(model, feeds):
    return onnxide.InferenceSession(model).run(None, feeds)


def check(op_type, inputs, outputs, attrs=None, rtol=1e-3, atol=1e-4, int_tol=0, const=(), opset=21,
          domain=MS, compare=None):
    model, feeds = build(op_type, inputs, outputs, attrs, domain=domain, opset=opset,
                         initializers={n: None for n in const})
    expected = run_ort(model, feeds)
    got = run_ide(model, feeds)
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got)):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype, f"output {i}: dtype {g.dtype} != {e.dtype}"
        assert g.shape == e.shape, f"output {i}: shape {g.shape} != {e.shape}"
        if compare is not None and compare(i, e, g):
            continue
        if e.dtype.kind in "iub":
            diff = np.abs(e.astype(np.int64) - g.astype(np.int64))
            assert diff.max(initial=0) <= int_tol, f"output {i}: max int diff {diff.max()}\n{e}\n{g}"
        else:
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=f"output {i}")
    return expected, got


F = TP.FLOAT
H16 = TP.FLOAT16


# ---------------------------------------------------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gelu_family(dtype):
    tol = dict(rtol=1e-3, atol=1e-4) if dtype == np.float32 else dict(rtol=5e-3, atol=5e-3)
    et = _NP2ONNX[np.dtype(dtype)]
    x = rand(2, 3, 8, dtype=dtype, lo=-4, hi=4)
    b = rand(8, dtype=dtype)
    check("Gelu", [("x", x)], [("y", et)], **tol)
    check("BiasGelu", [("x", x), ("b", b)], [("y", et)], **tol)
    check("FastGelu", [("x", x)], [("y", et)], **tol)
    check("FastGelu", [("x", x), ("b", b)], [("y", et)], **tol)
    check("QuickGelu", [("x", x)], [("y", et)], **tol)
    check("QuickGelu", [("x", x)], [("y", et)], {"alpha": 1.3}, **tol)


def graph_model(nodes, inputs, outputs, opset=21):
    """A model from several nodes (standard ops): the onnxruntime reference for CUDA-only contrib ops."""
    g_inputs = [helper.make_tensor_value_info(n, _NP2ONNX[a.dtype], a.shape) for n, a in inputs]
    g_outputs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    model = helper.make_model(helper.make_graph(nodes, "g", g_inputs, g_outputs),
                              opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 10
    return model.SerializeToString()


def test_bias_add_and_split_gelu():
    # CUDA-only in onnxruntime: the reference is onnxruntime running the same math as standard ops
    x, b, skip = rand(2, 5, 8), rand(8), rand(2, 5, 8)
    feeds = {"x": x, "b": b, "s": skip}
    ins = [("x", x), ("b", b), ("s", skip)]
    ref = graph_model([helper.make_node("Add", ["x", "b"], ["t"]), helper.make_node("Add", ["t", "s"], ["y"])],
                      ins, [("y", F)])
    ide = graph_model([helper.make_node("BiasAdd", ["x", "b", "s"], ["y"], domain=MS)], ins, [("y", F)])
    np.testing.assert_allclose(run_ide(ide, feeds)[0], run_ort(ref, feeds)[0], rtol=1e-5, atol=1e-6)
    ins, feeds = ins[:2], {"x": x, "b": b}
    ref = graph_model([helper.make_node("Add", ["x", "b"], ["t"]),
                       helper.make_node("Split", ["t"], ["l", "r"], axis=-1, num_outputs=2),
                       helper.make_node("Gelu", ["r"], ["g"]), helper.make_node("Mul", ["l", "g"], ["y"])],
                      ins, [("y", F)])
    ide = graph_model([helper.make_node("BiasSplitGelu", ["x", "b"], ["y"], domain=MS)], ins, [("y", F)])
    np.testing.assert_allclose(run_ide(ide, feeds)[0], run_ort(ref, feeds)[0], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------------
# normalization
# ---------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("skip_shape", [(2, 4, 16), (1, 4, 16), (4, 16)])
@pytest.mark.parametrize("with_beta,with_bias", [(True, True), (False, False), (True, False)])
def test_skip_layer_norm(skip_shape, with_beta, with_bias):
    x, skip, g = rand(2, 4, 16), rand(*skip_shape), rand(16)
    ins = [("x", x), ("skip", skip), ("g", g), ("beta", rand(16) if with_beta else None),
           ("bias", rand(16) if with_bias else None)]
    check("SkipLayerNormalization", ins, [("y", F)], {"epsilon": 1e-5})
    check("SkipLayerNormalization", ins, [("y", F), ("mean", F), ("inv", F), ("sum", F)])
    check("SkipLayerNormalization", ins, [("y", F), ("", F), ("", F), ("sum", F)])


def test_skip_layer_norm_fp16():
    x, skip, g, beta = (rand(2, 3, 8, dtype=np.float16) for _ in range(2)), None, rand(8, dtype=np.float16), \
        rand(8, dtype=np.float16)
    x, skip = list(x)
    check("SkipLayerNormalization", [("x", x), ("skip", skip), ("g", g), ("beta", beta)],
          [("y", H16), ("", F), ("", F), ("sum", H16)], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("with_bias", [True, False])
def test_skip_simplified_layer_norm(with_bias):
    x, skip, g = rand(2, 4, 16), rand(2, 4, 16), rand(16)
    ins = [("x", x), ("skip", skip), ("g", g), ("bias", rand(16) if with_bias else None)]
    check("SkipSimplifiedLayerNormalization", ins, [("y", F)], {"epsilon": 1e-6})
    check("SkipSimplifiedLayerNormalization", ins, [("y", F), ("mean", F), ("inv", F), ("sum", F)])
    check("SkipSimplifiedLayerNormalization", [("x", x[0]), ("skip", skip[0]), ("g", g)],
          [("y", F), ("", F), ("", F), ("sum", F)])


@pytest.mark.parametrize("axis", [-1, 1])
def test_simplified_layer_norm(axis):
    x = rand(2, 3, 8)
    scale = rand(*x.shape[axis % 3:])
    check("SimplifiedLayerNormalization", [("x", x), ("s", scale)], [("y", F)], {"axis": axis}, domain="")
    check("SimplifiedLayerNormalization", [("x", x), ("s", scale)], [("y", F), ("inv", F)],
          {"axis": axis, "epsilon": 1e-3}, domain="")


@pytest.mark.parametrize("variant", ["full", "no_segment", "no_mask", "pos_ids"])
def test_embed_layer_norm(variant):
    b, s, hidden = 2, 5, 16
    ids = randint(0, 30, b, s, dtype=np.int32)
    seg = randint(0, 2, b, s, dtype=np.int32)
    mask = np.ones((b, s), np.int32)
    mask[1, 3:] = 0
    ins = [("ids", ids), ("seg", None if variant == "no_segment" else seg), ("we", rand(30, hidden)),
           ("pe", rand(16, hidden)), ("se", None if variant == "no_segment" else rand(2, hidden)),
           ("g", rand(hidden)), ("beta", rand(hidden)), ("mask", None if variant == "no_mask" else mask)]
    if variant == "pos_ids":
        ins.append(("pos", randint(0, 16, b, s, dtype=np.int32)))
    outs = [("y", F), ("mi", TP.INT32)] + ([("sum", F)] if variant != "no_mask" else [])
    check("EmbedLayerNormalization", ins, outs, {"epsilon": 1e-5})


# ---------------------------------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------------------------------

I32 = TP.INT32


def _mask_variants(b, s, t):
    m2 = np.ones((b, t), np.int32)
    m2[0, -2:] = 0
    m3 = np.ones((b, s, t), np.int32)
    m3[1, :, :2] = 0
    lens = np.array([t, t - 1], np.int32)[:b]
    endstart = np.array([t, t - 1, 0, 1], np.int32)
    return {"none": None, "2d": m2, "3d": m3, "lens": lens, "endstart": endstart}


@pytest.mark.parametrize("mask", ["none", "2d", "3d", "lens", "endstart"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention(mask, unidirectional):
    b, s, hin, n = 2, 4, 12, 3
    x, w, bias = rand(b, s, hin), rand(hin, 3 * 12), rand(3 * 12)
    m = _mask_variants(b, s, s)[mask]
    check("Attention", [("x", x), ("w", w), ("bias", bias), ("mask", m)], [("y", F)],
          {"num_heads": n, "unidirectional": unidirectional})


@pytest.mark.parametrize("mask", ["none", "2d", "lens"])
def test_attention_past_and_bias(mask):
    b, s, p, hin, n = 2, 3, 2, 8, 2
    x, w, bias = rand(b, s, hin), rand(hin, 24), rand(24)
    past = rand(2, b, n, p, 4)
    m = _mask_variants(b, s, s + p)[mask]
    check("Attention", [("x", x), ("w", w), ("bias", bias), ("mask", m), ("past", past)],
          [("y", F), ("present", F)], {"num_heads": n, "unidirectional": 1})
    check("Attention", [("x", x), ("w", w), ("bias", None), ("mask", m), ("past", past)],
          [("y", F), ("present", F)], {"num_heads": n, "scale": 0.3})
    m = _mask_variants(b, s, s)[mask]
    check("Attention", [("x", x), ("w", w), ("bias", bias), ("mask", m), ("past", None), ("ab", rand(1, n, s, s))],
          [("y", F), ("present", F)], {"num_heads": n, "unidirectional": 1})


def test_attention_qkv_hidden_sizes_and_fully_masked():
    b, s, hin, n = 2, 3, 6, 2
    x, w, bias = rand(b, s, hin), rand(hin, 8 + 8 + 12), rand(28)
    check("Attention", [("x", x), ("w", w), ("bias", bias)], [("y", F)],
          {"num_heads": n, "qkv_hidden_sizes": [8, 8, 12]})
    m = np.ones((b, s), np.int32)
    m[1] = 0  # a fully masked row: mask_filter_value, not -inf
    check("Attention", [("x", x), ("w", w), ("bias", bias), ("m", m)], [("y", F)],
          {"num_heads": n, "qkv_hidden_sizes": [8, 8, 12], "unidirectional": 1, "mask_filter_value": -50.0})


@pytest.mark.parametrize("layout", ["separate", "packed_qkv", "packed_kv", "bnsh_kv"])
def test_multi_head_attention_layouts(layout):
    b, s, l_, n, h = 2, 3, 5, 2, 4
    d = n * h
    bias = rand(3 * d)
    if layout == "separate":
        ins = [("q", rand(b, s, d)), ("k", rand(b, l_, d)), ("v", rand(b, l_, d)), ("bias", bias)]
    elif layout in ("packed_qkv", "packed_kv"):
        # not implemented by onnxruntime's CPU EP: the reference is onnxruntime on the unpacked Q, K, V
        q = rand(b, s, d)
        kv = rand(b, s if layout == "packed_qkv" else l_, n, 2, h)
        sep = [("q", q), ("k", kv[:, :, :, 0].reshape(b, -1, d)), ("v", kv[:, :, :, 1].reshape(b, -1, d)),
               ("bias", bias)]
        model, feeds = build("MultiHeadAttention", sep, [("y", F)], {"num_heads": n})
        expected = run_ort(model, feeds)[0]
        if layout == "packed_qkv":
            packed = [("q", np.stack((q.reshape(b, s, n, h), kv[:, :, :, 0], kv[:, :, :, 1]), axis=3)),
                      ("k", None), ("v", None), ("bias", bias)]
        else:
            packed = [("q", q), ("k", kv), ("v", None), ("bias", bias)]
        model, feeds = build("MultiHeadAttention", packed, [("y", F)], {"num_heads": n})
        np.testing.assert_allclose(run_ide(model, feeds)[0], expected, rtol=1e-3, atol=1e-4)
        return
    else:
        ins = [("q", rand(b, s, d)), ("k", rand(b, n, l_, h)), ("v", rand(b, n, l_, h))]
    check("MultiHeadAttention", ins, [("y", F)], {"num_heads": n})


@pytest.mark.parametrize("mask", ["none", "2d", "3d", "lens"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_multi_head_attention_past_masks(mask, unidirectional):
    b, s, p, n, h = 2, 3, 2, 2, 4
    d = n * h
    t = s + p
    ins = [("q", rand(b, s, d)), ("k", rand(b, s, d)), ("v", rand(b, s, d)), ("bias", rand(3 * d)),
           ("m", _mask_variants(b, s, t)[mask]), ("ab", rand(b, 1, s, t)), ("pk", rand(b, n, p, h)),
           ("pv", rand(b, n, p, h))]
    check("MultiHeadAttention", ins, [("y", F), ("pk_out", F), ("pv_out", F)],
          {"num_heads": n, "unidirectional": unidirectional, "scale": 0.4})


def test_multi_head_attention_qk_output():
    b, s, n, h = 1, 3, 2, 4
    ins = [("q", rand(b, s, n * h)), ("k", rand(b, s, n * h)), ("v", rand(b, s, n * h))]
    check("MultiHeadAttention", ins, [("y", F), ("", F), ("", F), ("qk", F)], {"num_heads": n})


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("layout", ["3d", "4d", "3d_partial"])
@pytest.mark.parametrize("pos", ["offset", "full"])
def test_rotary_embedding(interleaved, layout, pos):
    b, s, n, h, max_s = 2, 3, 2, 8, 16
    rd = 4 if layout == "3d_partial" else h
    cos, sin = rand(max_s, rd // 2), rand(max_s, rd // 2)
    x = rand(b, n, s, h) if layout == "4d" else rand(b, s, n * h)
    pid = np.array([2], np.int64) if pos == "offset" else randint(0, max_s, b, s, dtype=np.int64)
    attrs = {"interleaved": interleaved}
    if layout == "3d_partial":
        attrs.update(num_heads=n, rotary_embedding_dim=rd)
    check("RotaryEmbedding", [("x", x), ("pid", pid), ("cos", cos), ("sin", sin)], [("y", F)], attrs)


def _gqa(b, s, past, nq=4, nkv=2, h=16, attrs=None, packed=False, rotary=False, extra=None, outs=3, seqlens=None,
         total=None, max_s=32, **kw):
    q = rand(b, s, nq * h)
    k, v = rand(b, s, nkv * h), rand(b, s, nkv * h)
    if packed:
        q, k, v = np.concatenate((q, k, v), axis=-1), None, None
    seqlens = np.full((b,), past + s - 1, np.int32) if seqlens is None else np.asarray(seqlens, np.int32)
    total = np.array(past + s if total is None else total, np.int32)
    ins = [("q", q), ("k", k), ("v", v), ("pk", rand(b, nkv, past, h) if past else None),
           ("pv", rand(b, nkv, past, h) if past else None), ("seqlens", seqlens), ("total", total)]
    a = {"num_heads": nq, "kv_num_heads": nkv, **(attrs or {})}
    if rotary:
        ins += [("cos", rand(max_s, h // 2)), ("sin", rand(max_s, h // 2))]
        a["do_rotary"] = 1
    for name, arr in (extra or {}).items():
        while len(ins) < {"pos": 9, "ab": 10, "sink": 11}[name]:
            ins.append((f"_{len(ins)}", None))
        ins.append((name, arr))
    outputs = [("y", F), ("pko", F), ("pvo", F), ("qk", F)][:outs]
    return check("GroupQueryAttention", ins, outputs, a, **kw)


@pytest.mark.parametrize("past,s,b", [(0, 5, 2), (4, 1, 2), (4, 3, 1)])
@pytest.mark.parametrize("variant", ["plain", "packed", "rotary", "rotary_interleaved", "window", "softcap",
                                     "smooth", "noncausal"])
def test_group_query_attention(past, s, b, variant):
    attrs, kw = {}, {}
    if variant == "packed":
        kw["packed"] = True
    if variant.startswith("rotary"):
        kw["rotary"] = True
        attrs["rotary_interleaved"] = int(variant.endswith("interleaved"))
    if variant == "window":
        attrs["local_window_size"] = 2
    if variant == "softcap":
        attrs["softcap"] = 2.0
        attrs["scale"] = 1.0
    if variant == "smooth":
        attrs["smooth_softmax"] = 1
    if variant == "noncausal":
        attrs["causal"] = 0
    _gqa(b, s, past, attrs=attrs, **kw)


@pytest.mark.parametrize("past,s,b", [(0, 4, 2), (3, 1, 2)])
def test_group_query_attention_inputs(past, s, b):
    t = past + s
    _gqa(b, s, past, extra={"ab": rand(b, 1, s, t)})
    _gqa(b, s, past, extra={"sink": rand(4)})
    _gqa(b, s, past, rotary=True, extra={"pos": randint(0, 32, b, s, dtype=np.int64)})
    _gqa(b, s, past, rotary=True, attrs={"local_window_size": 1, "softcap": 3.0}, extra={"sink": rand(4)})


@pytest.mark.parametrize("qk_output", [1, 2])
def test_group_query_attention_qk_output(qk_output):
    _gqa(1, 3, 0, outs=4, attrs={"qk_output": qk_output})
    _gqa(2, 1, 3, outs=4, attrs={"qk_output": qk_output})
    _gqa(1, 3, 0, outs=4, attrs={"qk_output": qk_output, "softcap": 2.0})
    _gqa(1, 3, 0, outs=4, attrs={"qk_output": qk_output}, extra={"ab": rand(1, 1, 3, 3)})
    _gqa(1, 2, 2, outs=4, attrs={"qk_output": qk_output}, extra={"sink": rand(4)})


def test_group_query_attention_ragged_prompt():
    # right-padded prompt: rows past an entry's length are unspecified, so only valid rows are compared
    lens = [5, 3]

    def valid_only(i, e, g):
        for bi, n in enumerate(lens):
            if i == 0:
                np.testing.assert_allclose(g[bi, :n], e[bi, :n], rtol=1e-3, atol=1e-4)
            else:
                np.testing.assert_allclose(g[bi, :, :n], e[bi, :, :n], rtol=1e-3, atol=1e-4)
        return True

    _gqa(2, 5, 0, seqlens=[n - 1 for n in lens], total=5, compare=valid_only)
    _gqa(2, 5, 0, seqlens=[n - 1 for n in lens], total=5, rotary=True, compare=valid_only)


def test_group_query_attention_query_seqlens():
    # right-padded chunk with a shared (capacity 8) cache: only valid output rows and cache rows are compared
    b, s, nq, nkv, h, cap = 2, 4, 4, 2, 16, 8
    qlen, tot = np.array([2, 4], np.int32), np.array([5, 7])

    def valid_only(i, e, g):
        for bi in range(b):
            if i == 0:
                np.testing.assert_allclose(g[bi, :qlen[bi]], e[bi, :qlen[bi]], rtol=1e-3, atol=1e-4)
            else:
                np.testing.assert_allclose(g[bi, :, :tot[bi]], e[bi, :, :tot[bi]], rtol=1e-3, atol=1e-4)
        return True

    ins = [("q", rand(b, s, nq * h)), ("k", rand(b, s, nkv * h)), ("v", rand(b, s, nkv * h)),
           ("pk", rand(b, nkv, cap, h)), ("pv", rand(b, nkv, cap, h)), ("seqlens", (tot - 1).astype(np.int32)),
           ("total", np.array(cap, np.int32)), ("cos", rand(32, h // 2)), ("sin", rand(32, h // 2))]
    ins += [(f"_{i}", None) for i in range(9, 16)] + [("qlen", qlen)]
    check("GroupQueryAttention", ins, [("y", F), ("pko", F), ("pvo", F)],
          {"num_heads": nq, "kv_num_heads": nkv, "do_rotary": 1}, compare=valid_only)


# ---------------------------------------------------------------------------------------------------------------------
# quantization
# ---------------------------------------------------------------------------------------------------------------------

U8, I8 = TP.UINT8, TP.INT8


def _qrange(dtype):
    return (0, 256) if dtype == np.uint8 else (-128, 128)


def _weight_qrange(dtype):
    """The range of int8 / uint8 weights multiplied with uint8 activations. onnxruntime's u8 x s8 kernels on AVX2
    without VNNI add pairs of products in saturating int16 (its documented saturation caveat): 7-bit int8 weights
    keep every pair in range, so onnxruntime stays an exact oracle on any x86 machine."""
    return (0, 256) if dtype == np.uint8 else (-64, 64)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("bshape", [(2, 3, 4), (4,), (1, 3, 1)])
def test_qlinear_binary(dtype, op_type, bshape):
    lo, hi = _qrange(dtype)
    a, b = randint(lo, hi, 2, 3, 4, dtype=dtype), randint(lo, hi, *bshape, dtype=dtype)
    z = lambda v: np.array(v, dtype)  # noqa: E731
    et = U8 if dtype == np.uint8 else I8
    for sa, sb, sc in [(0.02, 0.03, 0.05), (0.1, 0.1, 0.1), (0.007, 0.5, 0.013)]:
        check(op_type, [("a", a), ("as", np.float32(sa)), ("az", z(3)), ("b", b), ("bs", np.float32(sb)),
                        ("bz", z(-2 if dtype == np.int8 else 130)), ("cs", np.float32(sc)), ("cz", z(5))],
              [("c", et)])
    # omitted zero points: onnxruntime's type inference rejects the node, so its reference uses explicit zeros
    ins = [("a", a), ("as", np.float32(0.05)), ("az", z(0)), ("b", b), ("bs", np.float32(0.05)), ("bz", z(0)),
           ("cs", np.float32(0.07)), ("cz", z(0))]
    expected = run_ort(*build(op_type, ins, [("c", et)]))[0]
    got = run_ide(*build(op_type, [(n, None if n.endswith("z") else v) for n, v in ins], [("c", et)]))[0]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_unary_and_pool(dtype):
    lo, hi = _qrange(dtype)
    et = U8 if dtype == np.uint8 else I8
    x = np.arange(lo, hi).astype(dtype).reshape(4, 4, 16)
    z = lambda v: np.array(v, dtype)  # noqa: E731
    for xs, xz, ys, yz in [(0.05, 10, 1 / 256, 0 if dtype == np.uint8 else -128), (0.1, -3, 0.02, 7)]:
        xz = z(xz if dtype == np.int8 else abs(xz))
        ins = [("x", x), ("xs", np.float32(xs)), ("xz", xz), ("ys", np.float32(ys)), ("yz", z(yz))]
        check("QLinearSigmoid", ins, [("y", et)])
        check("QLinearLeakyRelu", ins, [("y", et)])
        check("QLinearLeakyRelu", ins, [("y", et)], {"alpha": 0.3})
        xi = randint(lo, hi, 2, 3, 5, 4, dtype=dtype)
        pool_ins = [("x", xi)] + ins[1:]
        check("QLinearGlobalAveragePool", pool_ins, [("y", et)])
        check("QLinearGlobalAveragePool", pool_ins, [("y", et)], {"channels_last": 1})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_concat(dtype):
    lo, hi = _qrange(dtype)
    et = U8 if dtype == np.uint8 else I8
    z = lambda v: np.array(v, dtype)  # noqa: E731
    a, b, c = randint(lo, hi, 2, 3, dtype=dtype), randint(lo, hi, 2, 5, dtype=dtype), randint(lo, hi, 2, 1,
                                                                                              dtype=dtype)
    ins = [("ys", np.float32(0.05)), ("yz", z(4)), ("a", a), ("as", np.float32(0.05)), ("az", z(4)),
           ("b", b), ("bs", np.float32(0.11)), ("bz", z(9)), ("c", c), ("cs", np.float32(0.013)), ("cz", z(2))]
    check("QLinearConcat", ins, [("y", et)], {"axis": 1})
    check("QLinearConcat", ins[:5] + [("a2", a), ("a2s", np.float32(0.02)), ("a2z", z(1))], [("y", et)],
          {"axis": 0})


@pytest.mark.parametrize("channels_last", [0, 1])
def test_ms_qlinear_conv(channels_last):
    x = randint(0, 256, 1, 3, 6, 6, dtype=np.uint8)
    w = randint(*_weight_qrange(np.int8), 4, 3, 3, 3, dtype=np.int8)
    ins = [("x", np.ascontiguousarray(np.moveaxis(x, 1, -1)) if channels_last else x), ("xs", np.float32(0.02)),
           ("xz", np.uint8(120)), ("w", w), ("ws", rand(4, lo=0.001, hi=0.01)), ("wz", np.zeros(4, np.int8)),
           ("ys", np.float32(0.1)), ("yz", np.uint8(128)), ("b", randint(-500, 500, 4, dtype=np.int32))]
    check("QLinearConv", ins, [("y", U8)], {"channels_last": channels_last, "pads": [1, 1, 1, 1],
                                              "kernel_shape": [3, 3]}, const=("w", "ws", "wz", "b"))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16])
@pytest.mark.parametrize("per_axis", [False, True])
def test_ms_quantize_dequantize(dtype, per_axis):
    x = rand(2, 3, 4, lo=-5, hi=5)
    scale = rand(3, lo=0.01, hi=0.1) if per_axis else np.float32(0.03)
    zp = (np.array([1, 2, 3]) if per_axis else np.array(5)).astype(dtype)
    et = _NP2ONNX[np.dtype(dtype)]
    check("QuantizeLinear", [("x", x), ("s", scale), ("z", zp)], [("y", et)], {"axis": 1} if per_axis else None)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    q = RNG.integers(lo, hi, size=(2, 3, 4), endpoint=True).astype(dtype)
    check("DequantizeLinear", [("x", q), ("s", scale), ("z", zp)], [("y", F)], {"axis": 1} if per_axis else None)
    check("DequantizeLinear", [("x", q), ("s", scale), ("z", None)], [("y", F)], {"axis": 1} if per_axis else None)


@pytest.mark.parametrize("bdtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_dynamic_quantize_matmul(bdtype, per_column, with_bias):
    a = rand(2, 3, 8, lo=-2, hi=3)
    lo, hi = _weight_qrange(bdtype)
    b = randint(lo, hi, 8, 5, dtype=bdtype)
    bs = rand(5, lo=0.01, hi=0.05) if per_column else np.float32(0.02)
    bz = (randint(0, 10, 5) if per_column else np.array(3)).astype(bdtype)
    ins = [("a", a), ("b", b), ("bs", bs), ("bz", bz), ("bias", rand(5) if with_bias else None)]
    check("DynamicQuantizeMatMul", ins, [("y", F)], const=("b", "bs", "bz", "bias"))
    check("DynamicQuantizeMatMul", ins[:3], [("y", F)], const=("b", "bs"))


@pytest.mark.parametrize("adtype,bdtype", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_column", [False, True])
def test_matmul_integer_to_float(adtype, bdtype, per_column):
    alo, ahi = _qrange(adtype)
    blo, bhi = _weight_qrange(bdtype)
    a, b = randint(alo, ahi, 2, 3, 8, dtype=adtype), randint(blo, bhi, 8, 5, dtype=bdtype)
    bs = rand(5, lo=0.01, hi=0.05) if per_column else np.float32(0.02)
    bz = (randint(0, 10, 5) if per_column else np.array(3)).astype(bdtype)
    ins = [("a", a), ("b", b), ("as", np.float32(0.03)), ("bs", bs), ("az", np.array(7, adtype)), ("bz", bz),
           ("bias", rand(5))]
    check("MatMulIntegerToFloat", ins, [("y", F)], const=("b", "bs", "bz", "bias"))
    check("MatMulIntegerToFloat", ins[:4], [("y", F)], const=("b", "bs"))


def _nbits_pack(codes, bits):
    """Little-endian bit packing of (..., n) codes into bytes (test-side encoder)."""
    bitsarr = ((codes[..., None].astype(np.uint16) >> np.arange(bits)) & 1).astype(np.uint8)
    return np.packbits(bitsarr.reshape(codes.shape[:-1] + (-1,)), axis=-1, bitorder="little")


@pytest.mark.parametrize("bits,block_size,k", [(4, 16, 32), (4, 32, 40), (8, 16, 48), (2, 16, 32), (4, 64, 64)])
@pytest.mark.parametrize("zp", ["none", "packed", "float"])
def test_matmul_nbits(bits, block_size, k, zp):
    if bits == 8 and zp == "float":
        pytest.skip("onnxruntime's CPU EP rejects 8-bit weights with float zero points")
    n = 6
    kb = -(-k // block_size)
    codes = randint(0, 2 ** bits, n, kb, block_size)
    b = _nbits_pack(codes, bits)
    scales = rand(n, kb, lo=0.01, hi=0.1)
    zps = None
    if zp == "packed":
        zps = _nbits_pack(randint(0, 2 ** bits, n, kb), bits)
    elif zp == "float":
        zps = rand(n, kb, lo=0, hi=2 ** bits - 1)
    a = rand(2, 3, k)
    ins = [("a", a), ("b", b), ("s", scales), ("z", zps)]
    attrs = {"K": k, "N": n, "bits": bits, "block_size": block_size}
    check("MatMulNBits", ins, [("y", F)], attrs, const=("b", "s", "z"))
    check("MatMulNBits", ins + [("g", None), ("bias", rand(n))], [("y", F)], attrs, const=("b", "s", "z", "bias"))


def test_matmul_nbits_fp16_and_accuracy_level():
    n, k, bs = 8, 32, 16
    b = _nbits_pack(randint(0, 16, n, 2, bs), 4)
    check("MatMulNBits", [("a", rand(3, k, dtype=np.float16)), ("b", b), ("s", rand(n, 2, lo=0.01, hi=0.1,
                                                                                    dtype=np.float16))],
          [("y", H16)], {"K": k, "N": n, "block_size": bs}, const=("b", "s"), rtol=1e-2, atol=1e-2)
    # accuracy_level 4 lets onnxruntime quantize A to int8: onnxide computes exactly, within A's quantization error
    check("MatMulNBits", [("a", rand(3, k)), ("b", b), ("s", rand(n, 2, lo=0.01, hi=0.1))], [("y", F)],
          {"K": k, "N": n, "block_size": bs, "accuracy_level": 4}, const=("b", "s"), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("wdtype", [np.uint8, np.int8])
def test_dynamic_quantize_lstm(direction, per_channel, wdtype):
    if wdtype == np.uint8 and per_channel:
        pytest.skip("onnxruntime's CPU EP rejects per-channel uint8 weights")
    t, b, inp, h = 4, 2, 5, 3
    d = 2 if direction == "bidirectional" else 1
    lo, hi = _weight_qrange(wdtype)
    w, r = randint(lo, hi, d, inp, 4 * h, dtype=wdtype), randint(lo, hi, d, h, 4 * h, dtype=wdtype)
    shape = (d, 4 * h) if per_channel else (d,)
    ws, rs = rand(*shape, lo=0.002, hi=0.01), rand(*shape, lo=0.002, hi=0.01)
    # onnxruntime requires symmetric (zero) zero points for int8 weights
    wz = (randint(100, 150, *shape) if wdtype == np.uint8 else np.zeros(shape)).astype(wdtype)
    rz = (randint(100, 150, *shape) if wdtype == np.uint8 else np.zeros(shape)).astype(wdtype)
    ins = [("x", rand(t, b, inp)), ("w", w), ("r", r), ("b", rand(d, 8 * h)),
           ("sl", np.array([4, 3], np.int32)), ("h0", rand(d, b, h)), ("c0", rand(d, b, h)), ("p", None),
           ("ws", ws), ("wz", wz), ("rs", rs), ("rz", rz)]
    # onnxruntime quantizes X and each step's hidden state to uint8 inside its GEMMs; onnxide quantizes at the same
    # points (DynamicQuantizeLinear) but not with MLAS's exact arithmetic: agreement is ~1e-3, not 1e-4
    check("DynamicQuantizeLSTM", ins, [("y", F), ("yh", F), ("yc", F)], {"direction": direction, "hidden_size": h},
          const=("w", "r", "ws", "wz", "rs", "rz"), rtol=1e-2, atol=3e-3)
