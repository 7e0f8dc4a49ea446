"""Shared check of the *_vs_ort quantizer tests: onnxide's and onnxruntime's quantize_dynamic, given one float model,
write the same nodes (op type and inputs) and the same initializers, bit for bit."""
import numpy as np


def assert_same_dynamic_quantization(src, folder, **options):
    """Quantize `src` with both tools into `folder` (ort.onnx, ours.onnx) and compare; returns the two paths."""
    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import quantize_dynamic as ort_quantize

    from onnxide.quantization import quantize_dynamic
    outs, paths = [], [str(folder / "ort.onnx"), str(folder / "ours.onnx")]
    for tool, path in zip((ort_quantize, quantize_dynamic), paths):
        tool(str(src), path, **options)
        q = onnx.load(path)
        outs.append(([(n.op_type, list(n.input)) for n in q.graph.node],
                     {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}))
    assert outs[1][0] == outs[0][0]
    assert outs[1][1].keys() == outs[0][1].keys()
    for k, v in outs[0][1].items():
        assert outs[1][1][k].dtype == v.dtype and np.array_equal(outs[1][1][k], v), k
    return paths
