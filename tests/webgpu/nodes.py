"""One-node models run on the WebGPU EP and the CPU EP, compared output by output, with where the node ran."""
import numpy as np
from onnx import helper, numpy_helper

import onnxide as ort

MS = "com.microsoft"


def model(node, feeds, inits=(), opset=18):
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in feeds.items()]
    outs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
    g = helper.make_graph([node], "g", ins, outs, [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if node.domain == MS else [])
    return helper.make_model(g, opset_imports=opsets).SerializeToString()


def run(provider, m, feeds):
    """(outputs, device types of the session's kernel steps)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m, so, providers=[provider])
    where = [s.device.type for s in sess._executor.main_plan.steps if not s.is_transfer]
    return sess.run(None, feeds), where


class Const:
    """An input given as an initializer (host inputs such as axes, pads or scales, and weights)."""

    def __init__(self, value):
        self.value = np.asarray(value)


def check(op, inputs, outputs=("y",), opset=18, rtol=1e-4, atol=1e-5, exact=False, on_device=True, **attrs):
    """Run `op` (com.microsoft's with an "ms:" prefix) on `inputs` (arrays fed at run time, Const initializers,
    None for an omitted input) on both EPs and compare every output; the node must have run on the WebGPU device
    (on_device=False: have been declined at claim time, so the CPU EP ran it). Returns the WebGPU EP's outputs."""
    domain = MS if op.startswith("ms:") else ""
    names = ["" if v is None else f"in{i}" for i, v in enumerate(inputs)]
    feeds = {n: v for n, v in zip(names, inputs) if n and not isinstance(v, Const)}
    inits = [(n, v.value) for n, v in zip(names, inputs) if isinstance(v, Const)]
    node = helper.make_node(op.removeprefix("ms:"), names, list(outputs), domain=domain, **attrs)
    m = model(node, feeds, inits, opset)
    got, where = run("WebGpuExecutionProvider", m, feeds)
    want, _ = run("CPUExecutionProvider", m, feeds)
    assert where == (["webgpu"] if on_device else ["cpu"]), f"{op} ran on {where}"
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"output {i}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        if exact:
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
        else:
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=rtol, atol=atol,
                                       err_msg=f"output {i}")
    return got
