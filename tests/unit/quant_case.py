"""One quantization run, shared by the no-`onnx` test (natively, in a subprocess that blocks `onnx` and ml_dtypes)
and the Pyodide browser test: builds a seeded float model (Conv → Relu → Flatten → MatMul → Add) through
onnxide.proto.onnx_api (the `onnx` package when importable, else onnxide's stand-in), quantizes it dynamically,
statically (QDQ, MinMax calibration over a CalibrationDataReader) and 4-bit weight-only (MatMulNBits), and returns
each quantized model's nodes, initializers and outputs (JSON). `python3 quant_case.py --no-onnx` prints it with
`onnx` and ml_dtypes made unimportable first. check_against_float: the bound on the error against float."""
import json
import os
import sys
import tempfile


# Max |quantized - float| as a fraction of the float outputs' span. 8-bit: one quantization step is 1/255 of a
# tensor's range (~0.4%); rounding errors of the inputs and weights, summed over 27 (Conv) and 512 (MatMul) terms,
# largely cancel: measured 0.6-0.7%, bound 2%. 4-bit weights: a step is 1/15 of a 32-value block's range: measured
# 3.5%, bound 8%.
TOL = {"dynamic": 0.02, "static_qdq": 0.02, "matmul4": 0.08}
OPS = {"dynamic": {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"},
       "static_qdq": {"QuantizeLinear", "DequantizeLinear", "Conv", "MatMul"},
       "matmul4": {"MatMulNBits"}}


def check_against_float(result, kind):
    """The quantized outputs are within TOL of the float outputs' span, and the kind's quantized ops are there."""
    import numpy as np
    want, got = np.array(result["float"]), np.array(result[kind]["outputs"])
    span = float(want.max() - want.min())
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) <= TOL[kind] * span, (kind, np.max(np.abs(got - want)), span)
    assert OPS[kind] <= {n[0] for n in result[kind]["nodes"]}


def _block_onnx():
    sys.modules["onnx"] = None  # `import onnx` raises ImportError, as in Pyodide
    sys.modules["ml_dtypes"] = None
    os.environ["ONNXIDE_NO_ML_DTYPES"] = "1"


def _model(helper, numpy_helper, TensorProto, np):  # noqa: N803 - onnx's class name
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b"),
             numpy_helper.from_array((rng.standard_normal((512, 10)) * 0.05).astype(np.float32), "m"),
             numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "c")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["conv"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
             helper.make_node("Flatten", ["relu"], ["flat"], name="flat"),
             helper.make_node("MatMul", ["flat", "m"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "c"], ["y"], name="add")]
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _value(v, np):
    """A JSON-able attribute value."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return [_value(x, np) for x in v]
    if hasattr(v, "data_type"):  # a TensorProto
        return {"tensor": v.data_type}
    return v


def _summary(path, samples):
    import numpy as np
    import onnxide
    from onnxide.proto.onnx_api import helper, numpy_helper, onnx
    m = onnx.load(path)
    nodes = [[n.op_type, n.domain, n.name, list(n.input), list(n.output),
              {a.name: _value(helper.get_attribute_value(a), np) for a in n.attribute}] for n in m.graph.node]
    inits = {}
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t)
        raw = np.asarray(a).view(np.uint8) if a.dtype.kind in "fV" and a.dtype.itemsize == 1 else a
        inits[t.name] = [t.data_type, list(t.dims), np.asarray(raw).astype(np.float64).ravel().tolist()]
    sess = onnxide.InferenceSession(path)
    outs = [sess.run(None, {"x": x})[0].tolist() for x in samples]
    return {"nodes": nodes, "inits": inits, "outputs": outs}


def run():
    """{"float": outputs, "dynamic" / "static_qdq" / "matmul4": summaries, "have_onnx": bool}."""
    import numpy as np
    from onnxide.proto.onnx_api import HAVE_ONNX, TensorProto, helper, numpy_helper, onnx
    from onnxide.quantization import CalibrationDataReader, QuantFormat, quantize_dynamic, quantize_static
    from onnxide.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer
    rng = np.random.default_rng(1)
    samples = [rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32) for _ in range(6)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": x} for x in samples])

        def get_next(self):
            return next(self.it, None)

    out = {"have_onnx": HAVE_ONNX}
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "float.onnx")
        onnx.save(_model(helper, numpy_helper, TensorProto, np), src)
        out["float"] = _summary(src, samples)["outputs"]
        quantize_dynamic(src, os.path.join(d, "dynamic.onnx"))
        quantize_static(src, os.path.join(d, "static_qdq.onnx"), Reader(), quant_format=QuantFormat.QDQ)
        q = MatMulNBitsQuantizer(onnx.load(src), algo_config=DefaultWeightOnlyQuantConfig(block_size=32))
        q.process()
        q.model.save_model_to_file(os.path.join(d, "matmul4.onnx"))
        for kind in ("dynamic", "static_qdq", "matmul4"):
            out[kind] = _summary(os.path.join(d, kind + ".onnx"), samples)
    return out


def run_more():
    """{name: max |quantized - float| over the samples, or the error's class and message} of the toolkit's other
    entry points: static QOperator, the histogram calibrations, per-channel, 16-bit activations, get_qdq_config,
    quant_pre_process; and int4 weights / external data (NotImplemented without ml_dtypes / onnx)."""
    import numpy as np
    import onnxide
    from onnxide.proto.onnx_api import TensorProto, helper, numpy_helper, onnx
    from onnxide.quantization import (
        CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, get_qdq_config, quant_pre_process,
        quantize, quantize_static,
    )
    rng = np.random.default_rng(1)
    samples = [rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32) for _ in range(4)]

    def reader():
        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter([{"x": x} for x in samples])

            def get_next(self):
                return next(self.it, None)
        return Reader()

    out = {}
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "float.onnx")
        onnx.save(_model(helper, numpy_helper, TensorProto, np), src)
        want = [onnxide.InferenceSession(src).run(None, {"x": x})[0] for x in samples]
        cases = {
            "qoperator": lambda p: quantize_static(src, p, reader(), quant_format=QuantFormat.QOperator),
            "entropy": lambda p: quantize_static(src, p, reader(), calibrate_method=CalibrationMethod.Entropy),
            "percentile": lambda p: quantize_static(src, p, reader(), calibrate_method=CalibrationMethod.Percentile),
            "distribution": lambda p: quantize_static(src, p, reader(),
                                                      calibrate_method=CalibrationMethod.Distribution),
            "per_channel": lambda p: quantize_static(src, p, reader(), per_channel=True),
            "uint16_activations": lambda p: quantize_static(src, p, reader(), activation_type=QuantType.QUInt16),
            "qdq_config": lambda p: quantize(src, p, get_qdq_config(onnx.load(src), reader())),
            "pre_process": lambda p: quant_pre_process(src, p),
            "int4_weights": lambda p: quantize_static(src, p, reader(), weight_type=QuantType.QInt4),
            "external_data": lambda p: quantize_static(src, p, reader(), use_external_data_format=True),
        }
        for name, make in cases.items():
            path = os.path.join(d, name + ".onnx")
            try:
                make(path)
            except Exception as e:  # noqa: BLE001 - reported, the test checks which
                out[name] = [type(e).__name__, str(e)]
                continue
            sess = onnxide.InferenceSession(path)
            got = [sess.run(None, {"x": x})[0] for x in samples]
            out[name] = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)) / float(
                max(w.max() for w in want) - min(w.min() for w in want))
    return out


if __name__ == "__main__":
    if "--no-onnx" in sys.argv:
        _block_onnx()
    print(json.dumps(run_more() if "--more" in sys.argv else run()))
