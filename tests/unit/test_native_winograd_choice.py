"""The native EP's Winograd choice (cpu_ops.native_winograd): 3×3 stride-1 convs with enough tiles for their channel
counts take nx_winograd_f4 where conv_winograd's numpy-tuned rule would not, and give the float64 result within
F(4×4,3×3)'s tolerance; few tiles at many channels, strides and few channels stay on the GEMM."""
import numpy as np
import pytest
from onnx import helper, numpy_helper

import onnxide

NATIVE = "NativeCPUExecutionProvider"
pytestmark = pytest.mark.skipif(NATIVE not in onnxide.get_available_providers(),
                                reason="native CPU kernels not built (native_eps/cpu_kernels/build.sh)")
rng = np.random.default_rng(3)


def _plan(c, m, spatial, strides=(1, 1)):
    from onnxide.ops.conv_geometry import ConvGeometry
    from onnxide_native import cpu_ops, lib
    w = rng.standard_normal((m, c, 3, 3)).astype(np.float32)
    w.flags.writeable = False
    g = ConvGeometry.conv((1, c) + spatial, w.shape, "Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          strides=list(strides)).as_2d()
    chosen = cpu_ops.native_winograd(1, c, m, tuple(g.kernel), g, g.out)
    plan = cpu_ops.conv_plan(lib.load(), (1, c) + spatial, w, (m,), None, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                             strides=list(strides))
    return chosen, plan.kind


@pytest.mark.parametrize("c, m, spatial, want", [
    (256, 256, (8, 80), True), (128, 256, (8, 80), True), (256, 256, (4, 80), True), (96, 96, (20, 20), True),
    (256, 256, (14, 14), False),
    (512, 512, (7, 7), False), (64, 64, (8, 8), False), (32, 64, (14, 14), False)])
def test_which_convs_take_winograd(c, m, spatial, want):
    chosen, kind = _plan(c, m, spatial)
    assert chosen == want
    if want:
        assert kind == "wino"


def test_strided_convs_stay_on_the_gemm():
    chosen, kind = _plan(256, 256, (16, 80), strides=(2, 2))
    assert not chosen and kind == "shifted"


@pytest.mark.parametrize("threads", [1, 2])
def test_a_conv_only_the_native_rule_picks_matches_float64(threads):
    c, m, h, w = 96, 64, 8, 40
    x, wt, b = (rng.standard_normal(s).astype(np.float32) for s in ((1, c, h, w), (m, c, 3, 3), (m,)))
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [1, c, h, w])],
                              [helper.make_tensor_value_info("y", 1, None)],
                              [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = onnxide.GraphOptimizationLevel.ORT_DISABLE_ALL
    y = onnxide.InferenceSession(model, so, providers=[NATIVE, "CPUExecutionProvider"]).run(None, {"x": x})[0]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    ref = sum(np.einsum("nchw,mc->nmhw", xp[:, :, i:i + h, j:j + w], wt[:, :, i, j].astype(np.float64))
              for i in range(3) for j in range(3)) + b[None, :, None, None]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-3)
