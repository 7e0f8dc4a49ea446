"""The device-resident core, proven with the mock device EP (tests/device/mock_device.py): placement at plan time,
transfers only where a host reader needs a value, weights placed once, releases at last use, bodies reading device
values in place, Loop-carried values staying on the device, awaitable kernels anywhere, nothing leaked."""
import asyncio
import concurrent.futures
import gc
import threading
import weakref

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide as ort
from device.mock_device import MOCK, HostAccess, install

F = TensorProto.FLOAT
rng = np.random.default_rng(0)


@pytest.fixture
def dev():
    gc.collect()  # earlier tests' sessions give their weights back first
    d = install()
    yield d
    d.asynchronous = False


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _sessions(model, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
    """A mock-device session and a CPU one; the graphs stay as written unless `level` says otherwise."""
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    return (ort.InferenceSession(model, so, providers=[MOCK]),
            ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]))


def _steps(plan):
    for s in plan.steps:
        yield s
        for b in (s.bodies or {}).values():
            yield from _steps(b)


def _cnn():
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    w2 = rng.standard_normal((48, 5)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["r", "shape"], ["flat"]),
             helper.make_node("MatMul", ["flat", "w2"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
    inits = [("w", w), ("b", b), ("w2", w2), ("zero", np.array(0, np.int64)), ("axes0", np.array([0], np.int64)),
             ("minus1", np.array([-1], np.int64))]
    return _model(nodes, [helper.make_tensor_value_info("x", F, ["N", 3, 3, 4])],
                  [helper.make_tensor_value_info("y", F, None)], inits)


def test_a_chain_stays_on_the_device_and_shape_reads_no_data(dev):
    dev_sess, cpu = _sessions(_cnn())
    assert dev.constants == 3 and dev.live_buffers() == 3  # w, b, w2 placed once, at creation
    plan = dev_sess._executor.main_plan
    where = {s.node.op_type: s.device.is_host for s in plan.steps}
    assert where == {"Conv": False, "Relu": False, "Shape": True, "Gather": True, "Unsqueeze": True,
                     "Concat": True, "Reshape": False, "MatMul": False, "Softmax": False}
    assert not any(s.is_transfer for s in plan.steps)  # no readback anywhere in the plan
    for batch in (2, 3, 2):
        x = rng.standard_normal((batch, 3, 3, 4)).astype(np.float32)
        dev.uploads = dev.downloads = 0
        got = dev_sess.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, cpu.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
        assert (dev.uploads, dev.downloads) == (1, 1)  # the feed in, the result out: Shape read only metadata
        assert dev.constants == 3 and dev.live_buffers() == 3  # nothing alive but the weights


def test_if_bodies_read_device_values_in_place(dev):
    w = rng.standard_normal(6).astype(np.float32)
    then_b = helper.make_graph([helper.make_node("Add", ["t", "wt"], ["o"])], "then", [],
                               [helper.make_tensor_value_info("o", F, [6])], [numpy_helper.from_array(w, "wt")])
    else_b = helper.make_graph([helper.make_node("Sub", ["t", "w"], ["o2"])], "else", [],
                               [helper.make_tensor_value_info("o2", F, [6])])
    nodes = [helper.make_node("Mul", ["x", "x"], ["t"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b)]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [6]),
                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                   [helper.make_tensor_value_info("y", F, [6])], [("w", w)])
    dev_sess, cpu = _sessions(model)
    placed = dev.constants
    assert placed == 2  # the outer w (read inside else) and the then branch's own wt, both once
    assert [s.device.is_host for s in dev_sess._executor.main_plan.steps] == [False, False]
    for c in (True, False, True):
        x = rng.standard_normal(6).astype(np.float32)
        feeds = {"x": x, "c": np.array(c)}
        dev.uploads = dev.downloads = 0
        np.testing.assert_allclose(dev_sess.run(None, feeds)[0], cpu.run(None, feeds)[0], rtol=1e-6)
        assert (dev.uploads, dev.downloads) == (1, 1)  # x in, y out; the condition is a host input
        assert dev.constants == placed and dev.live_buffers() == placed


def _loop_model(trips=5):
    w = rng.standard_normal(4).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["h", "w"], ["h2"]), helper.make_node("Tanh", ["h2"], ["h3"]),
         helper.make_node("Identity", ["cin"], ["cout"]), helper.make_node("Mul", ["h3", "h3"], ["sq"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cin", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h", F, [4])],
        [helper.make_tensor_value_info("cout", TensorProto.BOOL, []), helper.make_tensor_value_info("h3", F, [4]),
         helper.make_tensor_value_info("sq", F, [4])])
    nodes = [helper.make_node("Loop", ["M", "cond"], ["hf", "sqs"], body=body)]
    nodes[0].input.append("h0")
    return _model(nodes, [helper.make_tensor_value_info("h0", F, [4])],
                  [helper.make_tensor_value_info("hf", F, [4]), helper.make_tensor_value_info("sqs", F, [trips, 4])],
                  [("w", w), ("M", np.array(trips, np.int64)), ("cond", np.array(True))])


def test_loop_carried_values_stay_on_the_device(dev):
    dev_sess, cpu = _sessions(_loop_model())
    loop = dev_sess._executor.main_plan.steps[0]
    assert loop.node.op_type == "Loop" and not loop.device.is_host
    body = next(iter(loop.bodies.values()))
    assert {s.node.op_type: s.device.is_host for s in body.steps} == {"Add": False, "Tanh": False,
                                                                       "Identity": True, "Mul": False}
    h0 = rng.standard_normal(4).astype(np.float32)
    dev.uploads = dev.downloads = 0
    got, want = dev_sess.run(None, {"h0": h0}), cpu.run(None, {"h0": h0})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    # h0 in; the two results out; five iterations, no readback of the carried state or of the condition
    assert (dev.uploads, dev.downloads) == (1, 2)
    assert dev.live_buffers() == dev.constants == 1


def test_scan_slices_and_stacks_on_the_device(dev):
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "xt"], ["s2"]), helper.make_node("Identity", ["s2"], ["out"])], "body",
        [helper.make_tensor_value_info("s", F, [3]), helper.make_tensor_value_info("xt", F, [3])],
        [helper.make_tensor_value_info("s2", F, [3]), helper.make_tensor_value_info("out", F, [3])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["sf", "ys"], body=body, num_scan_inputs=1,
                              scan_input_directions=[1])]
    model = _model(nodes, [helper.make_tensor_value_info("s0", F, [3]), helper.make_tensor_value_info("x", F, [5, 3])],
                   [helper.make_tensor_value_info("sf", F, [3]), helper.make_tensor_value_info("ys", F, [5, 3])])
    dev_sess, cpu = _sessions(model)
    feeds = {"s0": np.zeros(3, np.float32), "x": rng.standard_normal((5, 3)).astype(np.float32)}
    got, want = dev_sess.run(None, feeds), cpu.run(None, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert (dev.uploads, dev.downloads) == (2, 2) and dev.live_buffers() == 0


def _in_thread(coro):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a fresh event loop (Playwright may own this one)
        return pool.submit(asyncio.run, coro).result()


def test_awaitable_kernels_run_anywhere_under_run_async(dev):
    dev.asynchronous = True  # every kernel and readback returns an awaitable, inside the Loop body too
    dev_sess, cpu = _sessions(_loop_model())
    h0 = rng.standard_normal(4).astype(np.float32)
    with pytest.raises(ort.EPFail, match=r"Add node.*MockDevice.*run_async"):  # the first awaitable, in the body
        dev_sess.run(None, {"h0": h0})
    got, want = _in_thread(dev_sess.run_async(None, {"h0": h0})), cpu.run(None, {"h0": h0})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert dev.live_buffers() == dev.constants


def test_profiling_covers_async_runs_and_transfers(dev, tmp_path):
    dev.asynchronous = True
    so = ort.SessionOptions()
    so.enable_profiling, so.profile_file_prefix = True, str(tmp_path / "p")
    sess = ort.InferenceSession(_loop_model(), so, providers=[MOCK])
    _in_thread(sess.run_async(None, {"h0": np.ones(4, np.float32)}))
    import json
    events = json.load(open(sess.end_profiling()))
    ops = {e["args"]["op_name"] for e in events if e.get("cat") == "Node"}
    assert {"Loop", "Add", "Tanh", "Mul"} <= ops


def test_set_providers_and_new_sessions_leak_nothing(dev):
    model = _cnn()
    sess = ort.InferenceSession(model, providers=[MOCK])
    refs = [weakref.ref(sess._executor)]
    for _ in range(5):
        sess.set_providers([MOCK])
        refs.append(weakref.ref(sess._executor))
    for _ in range(5):
        ort.InferenceSession(model, providers=[MOCK]).run(None, {"x": np.ones((1, 3, 3, 4), np.float32)})
    gc.collect()
    assert sum(r() is not None for r in refs) == 1  # only the current executor is alive
    assert dev.live_buffers() == 3  # and only its weights are on the device
    del sess
    gc.collect()
    assert dev.live_buffers() == 0


def test_threads_share_a_session_with_bodies(dev):
    dev_sess, cpu = _sessions(_loop_model())
    inputs = [rng.standard_normal(4).astype(np.float32) for _ in range(8)]
    want = [cpu.run(None, {"h0": h})[1] for h in inputs]
    errors, start = [], threading.Barrier(8)

    def work(k):
        start.wait()
        for _ in range(20):
            got = dev_sess.run(None, {"h0": inputs[k]})[1]
            if not np.allclose(got, want[k], rtol=1e-6):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and dev.live_buffers() == dev.constants


def test_the_mock_catches_host_access(dev):
    h = dev.upload(np.ones(3, np.float32))
    with pytest.raises(HostAccess):
        np.asarray(h)
    dev.release(h)
    with pytest.raises(HostAccess):
        dev.release(h)  # twice
