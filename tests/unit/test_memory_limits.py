"""The session memory limit: ops that size a tensor from values check it before allocating and fail with onnxruntime's
RuntimeException naming the node, the size and the config entry — on every EP, within the limit a session sets
(onnxide.memory_limit_bytes), in well under a second and without touching the memory first."""
import resource
import time

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxide
from onnxide.runtime import limits

vi = helper.make_tensor_value_info
EPS = [p for p in ("CPUExecutionProvider", "NativeCPUExecutionProvider", "WasmExecutionProvider")
       if p in onnxide.get_available_providers()]


def _model(nodes, inputs, inits=(), opset=18, output="y"):
    g = helper.make_graph(nodes, "g", inputs, [helper.ValueInfoProto(name=output)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


X = vi("x", T.FLOAT, [1, 4, 8, 8])
BOMBS = {
    "ConstantOfShape": (_model([helper.make_node("ConstantOfShape", ["s"], ["y"])], [vi("s", T.INT64, [2])]),
                        {"s": np.array([10**6, 10**6], np.int64)}),
    "Expand": (_model([helper.make_node("Expand", ["x", "s"], ["y"])], [X], [("s", np.array([10**7, 4, 8, 8]))]),
               None),
    "Tile": (_model([helper.make_node("Tile", ["x", "r"], ["y"])], [X], [("r", np.array([1, 1, 10**6, 10**6]))]),
             None),
    "Range": (_model([helper.make_node("Range", ["a", "l", "d"], ["y"])], [],
                     [("a", np.array(0, np.int64)), ("l", np.array(10**15, np.int64)), ("d", np.array(1, np.int64))]),
              None),
    "Resize": (_model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")], [X],
                      [("sc", np.array([1, 1, 1e6, 1e6], np.float32))]), None),
    "Resize linear": (_model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear")], [X],
                             [("sc", np.array([1, 1, 1e7, 1], np.float32))]), None),
    "Pad": (_model([helper.make_node("Pad", ["x", "p"], ["y"])], [X], [("p", np.array([0, 0, 10**6, 10**6] * 2))]),
            None),
    "OneHot": (_model([helper.make_node("OneHot", ["i", "d", "v"], ["y"])], [vi("i", T.INT64, [1000])],
                      [("d", np.array(10**9, np.int64)), ("v", np.array([0, 1], np.float32))]),
               {"i": np.zeros(1000, np.int64)}),
}


def _feeds(sess, given):
    if given is not None:
        return given
    return {i.name: np.ones([d if isinstance(d, int) else 1 for d in i.shape], np.float32) for i in sess.get_inputs()}


def _doubling(n=40):
    """Concat(t, t) n times over a 1 KiB input: 2^n KiB at the end."""
    nodes = [helper.make_node("Concat", [f"t{i}", f"t{i}"], [f"t{i + 1}" if i + 1 < n else "y"], axis=0)
             for i in range(n)]
    return _model(nodes, [vi("t0", T.FLOAT, [256])], opset=13)


@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("name", sorted(BOMBS) + ["Concat x40"])
def test_a_bomb_stops_at_the_limit_before_allocating(name, ep):
    data, given = BOMBS[name] if name in BOMBS else (_doubling(), {"t0": np.ones(256, np.float32)})
    so = onnxide.SessionOptions()
    so.add_session_config_entry(limits.CONFIG_KEY, str(64 << 20))
    sess = onnxide.InferenceSession(data, so, providers=[ep])
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    with pytest.raises(onnxide.RuntimeException, match=limits.CONFIG_KEY) as e:
        sess.run(None, _feeds(sess, given))
    assert "node. Name:" in str(e.value) and "Failed to allocate memory for requested buffer of size" in str(e.value)
    assert time.monotonic() - t0 < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < (1 << 19)  # KiB: under 512 MiB more peak


def test_loop_scan_outputs_stop_at_the_limit():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Identity", ["big"], ["s"])], "body",
        [vi("i", T.INT64, []), vi("c", T.BOOL, [])], [vi("c2", T.BOOL, []), vi("s", T.FLOAT, [1 << 18])])
    data = _model([helper.make_node("Loop", ["n", ""], ["y"], body=body)], [vi("n", T.INT64, [])],
                  [("big", np.zeros(1 << 18, np.float32))], opset=17)
    so = onnxide.SessionOptions()
    so.add_session_config_entry(limits.CONFIG_KEY, str(64 << 20))  # 64 iterations of 1 MiB
    sess = onnxide.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    assert sess.run(None, {"n": np.array(60, np.int64)})[0].shape == (60, 1 << 18)
    with pytest.raises(onnxide.RuntimeException, match="Loop scan outputs after 65 iterations"):
        sess.run(None, {"n": np.array(10**9, np.int64)})


def test_the_limit_is_the_sessions():
    data, _ = BOMBS["Tile"]
    small = _model([helper.make_node("Tile", ["x", "r"], ["y"])], [X], [("r", np.array([1, 1, 4, 4]))])
    so = onnxide.SessionOptions()
    so.add_session_config_entry(limits.CONFIG_KEY, "4096")  # bytes: the 4x4-tiled output takes 16 KiB
    with pytest.raises(onnxide.RuntimeException, match="above the session's memory limit of 4096 bytes"):
        onnxide.InferenceSession(small, so, providers=["CPUExecutionProvider"]).run(
            None, {"x": np.ones((1, 4, 8, 8), np.float32)})
    so.add_session_config_entry(limits.CONFIG_KEY, "0")  # no limit
    out = onnxide.InferenceSession(small, so, providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((1, 4, 8, 8), np.float32)})[0]
    assert out.shape == (1, 4, 32, 32)
    assert 0 < limits.default_limit() <= limits._caps()[0]  # a fraction of physical memory by default


def test_a_constant_bomb_fails_at_run_not_while_folding():
    data = _model([helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [("s", np.array([10**6, 10**6]))])
    sess = onnxide.InferenceSession(data, providers=["CPUExecutionProvider"])
    with pytest.raises(onnxide.RuntimeException, match="ConstantOfShape"):
        sess.run(None, {})
