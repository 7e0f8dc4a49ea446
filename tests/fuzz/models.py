"""Small models built in code — a conv net, a transformer block, an If / Loop model — with feeds: fuzzing seeds and
the soak tests' workloads (each EP runs something of its own in them)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits, opset=17, ms=False):
    g = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    return helper.make_model(g, opset_imports=ops, ir_version=8).SerializeToString()


def conv_net(seed=0):
    """(model bytes, feeds): Conv 3x3 → BatchNorm → Relu → depthwise Conv → MaxPool → Conv 1x1 → GlobalAveragePool
    → Gemm → Softmax on a 1×8×32×32 input (large enough that the native and WASM EPs run their own kernels)."""
    r = np.random.default_rng(seed)
    w = lambda *s: (r.standard_normal(s) * 0.2).astype(np.float32)  # noqa: E731
    inits = {"w1": w(16, 8, 3, 3), "b1": w(16), "sc": np.abs(w(16)) + 0.5, "sh": w(16), "mu": w(16),
             "var": np.abs(w(16)) + 0.5, "wd": w(16, 1, 3, 3), "w2": w(32, 16, 1, 1), "wf": w(10, 32), "bf": w(10)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "sc", "sh", "mu", "var"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["dw"], group=16, pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["dw"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["c2"]),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], transB=1),
             helper.make_node("Softmax", ["logits"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", F, [1, 8, 32, 32])],
               [helper.make_tensor_value_info("y", F, [1, 10])], inits)
    return m, {"x": r.standard_normal((1, 8, 32, 32)).astype(np.float32)}


def transformer(seed=0, s=32, d=64, heads=4):
    """(model bytes, feeds): one encoder block — LayerNorm, Q/K/V MatMuls, scaled dot-product attention with
    Softmax, output projection, residual, GELU MLP — over (1, s, d)."""
    r = np.random.default_rng(seed)
    w = lambda *sh: (r.standard_normal(sh) / np.sqrt(sh[0])).astype(np.float32)  # noqa: E731
    h = d // heads
    inits = {"g": np.ones(d, np.float32), "b": np.zeros(d, np.float32), "wq": w(d, d), "wk": w(d, d),
             "wv": w(d, d), "wo": w(d, d), "w1": w(d, 4 * d), "w2": w(4 * d, d),
             "split": np.array([1, s, heads, h], np.int64), "merge": np.array([1, s, d], np.int64),
             "scale": np.array(1 / np.sqrt(h), np.float32)}
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1)]
    for n in "qkv":
        nodes += [helper.make_node("MatMul", ["ln", "w" + n], [n + "0"]),
                  helper.make_node("Reshape", [n + "0", "split"], [n + "1"]),
                  helper.make_node("Transpose", [n + "1"], [n + "h"], perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["qh", "kh"], ["s0"]), helper.make_node("Mul", ["s0", "scale"], ["s1"]),
              helper.make_node("Softmax", ["s1"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "vh"], ["o0"]),
              helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["o1", "merge"], ["o2"]), helper.make_node("MatMul", ["o2", "wo"], ["o3"]),
              helper.make_node("Add", ["x", "o3"], ["res"]),
              helper.make_node("LayerNormalization", ["res", "g", "b"], ["ln2"], axis=-1),
              helper.make_node("MatMul", ["ln2", "w1"], ["m1"]), helper.make_node("Gelu", ["m1"], ["m2"]),
              helper.make_node("MatMul", ["m2", "w2"], ["m3"]), helper.make_node("Add", ["res", "m3"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", F, [1, s, d])],
               [helper.make_tensor_value_info("y", F, [1, s, d])], inits, opset=20)
    return m, {"x": r.standard_normal((1, s, d)).astype(np.float32)}


def if_loop(seed=0, n=64):
    """(model bytes, feeds): If on the sign of sum(x) (Mul or Neg branch), then a Loop adding it to x `steps`
    times with a scan output of each step, over x of shape (n, n)."""
    r = np.random.default_rng(seed)
    vi = helper.make_tensor_value_info
    then_b = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [], [vi("t", F, [n, n])])
    else_b = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", F, [n, n])])
    body = helper.make_graph(
        [helper.make_node("Add", ["h", "y"], ["h2"]), helper.make_node("Identity", ["c"], ["c2"]),
         helper.make_node("ReduceSum", ["h2"], ["s"], keepdims=0)], "body",
        [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("h", F, [n, n])],
        [vi("c2", TensorProto.BOOL, []), vi("h2", F, [n, n]), vi("s", F, [])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
             helper.make_node("Greater", ["sum", "zero"], ["pos"]),
             helper.make_node("If", ["pos"], ["y"], then_branch=then_b, else_branch=else_b),
             helper.make_node("Loop", ["steps", "", "x"], ["out", "sums"], body=body)]
    m = _model(nodes, [vi("x", F, [n, n]), vi("steps", TensorProto.INT64, [])],
               [vi("out", F, [n, n]), vi("sums", F, [None])], {"zero": np.zeros((), np.float32)})
    return m, {"x": r.standard_normal((n, n)).astype(np.float32), "steps": np.array(5, np.int64)}


BUILT = {"conv_net": conv_net, "transformer": transformer, "if_loop": if_loop}
