"""The dynamic-quantization fusions (optimizer/fuse_quant.py): DynamicQuantizeLinear → MatMulInteger → Cast → Mul
(scale product) [→ Add bias] becomes com.microsoft DynamicQuantizeMatMul (one per reader when the quantized input is
shared; MatMulIntegerToFloat when a reader does not fuse) at the extended level, leaves near misses alone, and the
saved fused model runs in onnxruntime.

Tolerances: onnxide's fused kernels do the unfused graph's float32 steps in the same order (float(acc) times the
float32 product a_scale * b_scale, then + bias), so its fused and unfused outputs must be bit-identical. Against
onnxruntime the integer products are exact; its epilogue may compute acc * scale + bias as one fused multiply-add
(one rounding instead of two), so values may differ by about one float32 rounding of the result's magnitude:
atol = 2**-22 * max|y| (two units in the last place of the largest output), rtol 0."""
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide as ort

rng = np.random.default_rng(0)
K, N = 16, 12
X = (rng.standard_normal((2, 5, K)) * 3).astype(np.float32)


def _weights(wtype, per_column):
    """8-bit weights; int8 ones stay within ±63 so onnxruntime's u8s8 kernels (pairwise int16 sums) cannot
    saturate, which would make its fused and unfused results differ for a reason unrelated to the fusion."""
    if wtype == "int8":
        w = rng.integers(-63, 64, (K, N)).astype(np.int8)
        zp = rng.integers(-3, 4, N if per_column else ()).astype(np.int8)
    else:
        w = rng.integers(0, 256, (K, N)).astype(np.uint8)
        zp = rng.integers(120, 136, N if per_column else ()).astype(np.uint8)
    scale = (rng.random(N if per_column else ()) * 0.02 + 0.001).astype(np.float32)
    return w, scale, zp


def _chain(tag, x="x", mul_order=(0, 1), scale_order=(0, 1), bias=True):
    """One MatMulInteger chain as the dynamic quantizer writes it, reading DynamicQuantizeLinear's outputs."""
    xq, xs, xz = f"{x}_q", f"{x}_s", f"{x}_z"
    sc_in = [[xs, f"ws{tag}"][i] for i in scale_order]
    mul_in = [[f"accf{tag}", f"sc{tag}"][i] for i in mul_order]
    nodes = [helper.make_node("MatMulInteger", [xq, f"w{tag}", xz, f"wz{tag}"], [f"acc{tag}"]),
             helper.make_node("Cast", [f"acc{tag}"], [f"accf{tag}"], to=TensorProto.FLOAT),
             helper.make_node("Mul", sc_in, [f"sc{tag}"]),
             helper.make_node("Mul", mul_in, [f"m{tag}" if bias else f"y{tag}"])]
    if bias:
        nodes.append(helper.make_node("Add", [f"b{tag}", f"m{tag}"], [f"y{tag}"]))
    return nodes


def _model(chains, wtype="int8", per_column=True, extra_outputs=(), weight_input=False):
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_s", "x_z"])]
    inits, outs = [], []
    for tag, kw in chains:
        nodes += _chain(tag, **kw)
        w, scale, zp = _weights(wtype, per_column)
        inits += [numpy_helper.from_array(scale, f"ws{tag}"), numpy_helper.from_array(zp, f"wz{tag}"),
                  numpy_helper.from_array((rng.standard_normal(N) * 0.1).astype(np.float32), f"b{tag}")]
        if not weight_input:
            inits.append(numpy_helper.from_array(w, f"w{tag}"))
        outs.append(helper.make_tensor_value_info(f"y{tag}", TensorProto.FLOAT, [2, 5, N]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, K])]
    if weight_input:
        inputs += [helper.make_tensor_value_info(f"w{tag}", getattr(TensorProto, wtype.upper()), [K, N])
                   for tag, _ in chains]
    outs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in extra_outputs]
    g = helper.make_graph(nodes, "g", inputs, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, tmp_path, feeds=None):
    """(fused node list, onnxide unfused outputs, onnxide optimized outputs, path of the saved optimized model)."""
    feeds = feeds or {"x": X}
    data = model.SerializeToString()
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(data, so).run(None, feeds)
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    sess = ort.InferenceSession(data, so)
    return sess._model.graph.nodes, plain, sess.run(None, feeds), so.optimized_model_filepath


def _close_to_onnxruntime(ours, theirs):
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=2.0 ** -22 * float(np.abs(b).max()))


@pytest.mark.parametrize("wtype,per_column,mul_order,scale_order,bias", [
    ("int8", True, (0, 1), (0, 1), True), ("uint8", False, (1, 0), (1, 0), True),
    ("int8", False, (0, 1), (1, 0), False), ("uint8", True, (1, 0), (0, 1), False)])
def test_dynamic_quantize_matmul_fusion(tmp_path, wtype, per_column, mul_order, scale_order, bias):
    m = _model([("0", dict(mul_order=mul_order, scale_order=scale_order, bias=bias))], wtype, per_column)
    nodes, plain, opt, path = _run(m, tmp_path)
    assert [(n.op_type, n.domain) for n in nodes] == [("DynamicQuantizeMatMul", "com.microsoft")]
    assert nodes[0].inputs == ["x", "w0", "ws0", "wz0"] + (["b0"] if bias else [])
    np.testing.assert_array_equal(opt[0], plain[0])  # same float32 steps, same order
    saved = onnx.load(path)
    onnx.checker.check_model(saved)
    assert {o.domain: o.version for o in saved.opset_import}.get("com.microsoft") == 1
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    ort_unfused = onnxruntime.InferenceSession(m.SerializeToString(), so).run(None, {"x": X})
    ort_fused = onnxruntime.InferenceSession(path, so).run(None, {"x": X})
    _close_to_onnxruntime(ort_fused, ort_unfused)
    _close_to_onnxruntime(opt, ort_fused)


def test_shared_quantized_input_becomes_one_dynamic_quantize_matmul_per_reader(tmp_path):
    """One DynamicQuantizeLinear read by two chains (as Q/K/V projections are): each chain becomes a
    DynamicQuantizeMatMul of x (quantizing x again gives the same values: bit-identical to the unfused graph)."""
    m = _model([("0", {}), ("1", dict(bias=False))])
    nodes, plain, opt, path = _run(m, tmp_path)
    assert [n.op_type for n in nodes] == ["DynamicQuantizeMatMul", "DynamicQuantizeMatMul"]
    assert nodes[0].inputs == ["x", "w0", "ws0", "wz0", "b0"] and nodes[1].inputs == ["x", "w1", "ws1", "wz1"]
    for a, b in zip(opt, plain):
        np.testing.assert_array_equal(a, b)
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    _close_to_onnxruntime(onnxruntime.InferenceSession(path, so).run(None, {"x": X}),
                          onnxruntime.InferenceSession(m.SerializeToString(), so).run(None, {"x": X}))


def test_shared_quantized_input_with_a_reader_that_does_not_fuse_stays(tmp_path):
    """A second reader of the quantized x that is not a fusable chain (its scale product is a graph output) keeps
    DynamicQuantizeLinear for both: the first chain becomes MatMulIntegerToFloat."""
    m = _model([("0", {}), ("1", {})], extra_outputs=[("sc1", [N])])
    nodes, plain, opt, _ = _run(m, tmp_path)
    assert [n.op_type for n in nodes] == ["DynamicQuantizeLinear", "MatMulIntegerToFloat"] + UNFUSED[1:]
    for a, b in zip(opt, plain):
        np.testing.assert_array_equal(a, b)


UNFUSED = ["DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul", "Add"]


@pytest.mark.parametrize("case", ["scale_used_twice", "weight_not_constant", "cast_is_output", "product_is_output",
                                  "scale_product_is_output", "weight_scale_2d", "activation_scale_is_output"])
def test_near_misses_stay_unfused(tmp_path, case):
    feeds = {"x": X}
    if case == "weight_not_constant":
        m = _model([("0", {})], weight_input=True)
        feeds["w0"] = rng.integers(-63, 64, (K, N)).astype(np.int8)
    elif case == "scale_used_twice":  # the scale product also feeds a second output
        m = _model([("0", {})])
        m.graph.node.append(helper.make_node("Mul", ["sc0", "sc0"], ["sq"]))
        m.graph.output.append(helper.make_tensor_value_info("sq", TensorProto.FLOAT, None))
    elif case == "weight_scale_2d":  # [1, N]: broadcasts like per-column, but not a shape the fused op takes
        m = _model([("0", {})])
        ws = next(i for i in m.graph.initializer if i.name == "ws0")
        ws.dims[:] = [1, N]
    else:
        name, shape = {"cast_is_output": ("accf0", [2, 5, N]), "product_is_output": ("m0", [2, 5, N]),
                       "scale_product_is_output": ("sc0", [N]), "activation_scale_is_output": ("x_s", [])}[case]
        m = _model([("0", {})], extra_outputs=[(name, shape)])
    nodes, plain, opt, _ = _run(m, tmp_path, feeds)
    ops = [n.op_type for n in nodes]
    if case == "product_is_output":  # the bias Add stays out; the rest fuses
        assert ops == ["DynamicQuantizeMatMul", "Add"]
    elif case == "activation_scale_is_output":  # DynamicQuantizeLinear stays for it; the chain still fuses
        assert ops == ["DynamicQuantizeLinear", "MatMulIntegerToFloat"]
    else:
        assert ops == UNFUSED + (["Mul"] if case == "scale_used_twice" else [])
    for a, b in zip(opt, plain):
        np.testing.assert_array_equal(a, b)
