"""The bundled default model (a small image CNN built in code, fixed seed) and the native main job that runs it."""
import time

import numpy as np

from . import proto as P
from .ir.to_proto import make_attribute, tensor_value_info as _vi
from .tensors import from_numpy

INPUT_SHAPE = (1, 3, 64, 64)


def default_model_bytes():
    """A 4-conv CNN classifier (BatchNorm, Relu, MaxPool, GlobalAveragePool, Gemm, Softmax) as ONNX bytes."""
    rng = np.random.default_rng(2026)
    inits, nodes = [], []

    def weight(name, shape, scale):
        inits.append(from_numpy((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    x, c_in = "image", 3
    for i, c_out in enumerate((16, 32, 64, 64)):
        w = weight(f"conv{i}.w", (c_out, c_in, 3, 3), (2.0 / (c_in * 9)) ** 0.5)
        b = weight(f"conv{i}.b", (c_out,), 0.05)
        nodes.append(P.NodeProto(op_type="Conv", name=f"conv{i}", input=[x, w, b], output=[f"c{i}"],
                                 attribute=[make_attribute("kernel_shape", [3, 3]), make_attribute("pads", [1, 1, 1, 1])]))
        stats = {"scale": 1 + rng.standard_normal(c_out) * 0.1, "bias": rng.standard_normal(c_out) * 0.1,
                 "mean": rng.standard_normal(c_out) * 0.1, "var": rng.random(c_out) + 0.5}
        inits += [from_numpy(v.astype(np.float32), f"bn{i}.{k}") for k, v in stats.items()]
        nodes.append(P.NodeProto(op_type="BatchNormalization", name=f"bn{i}",
                                 input=[f"c{i}"] + [f"bn{i}.{k}" for k in stats], output=[f"n{i}"]))
        nodes.append(P.NodeProto(op_type="Relu", name=f"relu{i}", input=[f"n{i}"], output=[f"r{i}"]))
        x = f"r{i}"
        if i < 3:
            nodes.append(P.NodeProto(op_type="MaxPool", name=f"pool{i}", input=[x], output=[f"p{i}"],
                                     attribute=[make_attribute("kernel_shape", [2, 2]), make_attribute("strides", [2, 2])]))
            x = f"p{i}"
        c_in = c_out
    nodes.append(P.NodeProto(op_type="GlobalAveragePool", name="gap", input=[x], output=["g"]))
    nodes.append(P.NodeProto(op_type="Flatten", name="flatten", input=["g"], output=["f"]))
    w, b = weight("fc.w", (10, c_in), 0.2), weight("fc.b", (10,), 0.05)
    nodes.append(P.NodeProto(op_type="Gemm", name="fc", input=["f", w, b], output=["logits"],
                             attribute=[make_attribute("transB", 1)]))
    nodes.append(P.NodeProto(op_type="Softmax", name="softmax", input=["logits"], output=["probs"],
                             attribute=[make_attribute("axis", 1)]))
    graph = P.GraphProto(name="onnxide_default_cnn", node=nodes, initializer=inits,
                         input=[_vi("image", ("batch", 3, 64, 64))], output=[_vi("probs", ("batch", 10))])
    model = P.ModelProto(ir_version=8, producer_name="onnxide", graph=graph,
                         opset_import=[P.OperatorSetIdProto(domain="", version=17)])
    return model.SerializeToString()


def default_input():
    return np.random.default_rng(7).random(INPUT_SHAPE, dtype=np.float32)


def main(iterations=60):
    """Run the default model natively with onnxide (and onnxruntime when installed, timed in alternating blocks at
    the same thread count: onnxide.bench); print results and timings."""
    import onnxide

    from .bench import bench_model

    data, x = default_model_bytes(), default_input()
    t = time.perf_counter()
    sess = onnxide.InferenceSession(data)
    create_ms = (time.perf_counter() - t) * 1e3
    probs = sess.run(None, {"image": x})[0]
    top = np.argsort(-probs[0])[:3]
    print(f"onnxide {onnxide.__version__} (native, {' + '.join(sess.get_providers())}): default CNN {INPUT_SHAPE}")
    print("  top-3 classes: " + ", ".join(f"{int(i)} ({probs[0, i]:.4f})" for i in top))
    try:
        import onnxruntime as ort
    except ImportError:
        run_ms = bench_model(data, 1, 3, iterations, feeds={"image": x}, with_ort=False)["onnxide_ms"]
        print(f"  session creation {create_ms:.1f} ms, run median {run_ms:.2f} ms over {iterations} runs (1 thread)")
        print("  onnxruntime not installed: no side-by-side numbers")
        return 0
    r = bench_model(data, 1, 3, iterations, feeds={"image": x})
    print(f"  session creation {create_ms:.1f} ms, run median {r['onnxide_ms']:.2f} ms over {iterations} runs "
          "(1 thread)")
    print(f"onnxruntime {ort.__version__} (1 thread): run median {r['ort_ms']:.2f} ms (blocks of runs alternating "
          f"with onnxide's); onnxide/onnxruntime = {r['ratio']:.2f}x; max |diff| = {r['max_abs_diff']:.2e}")
    return 0
