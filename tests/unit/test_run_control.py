"""RunOptions stop a run: `terminate` set from another thread, and the run timeout config entry, between nodes and
inside Loop iterations (a runaway Loop stops, as onnxruntime's does), for run and run_async alike."""
import asyncio
import concurrent.futures
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxide as ort


def _runaway_loop(with_body_nodes=True):
    nodes = [helper.make_node("Add", ["x", "one"], ["x2"]), helper.make_node("Identity", ["c"], ["c2"])]
    body = helper.make_graph(
        nodes if with_body_nodes else [helper.make_node("Identity", ["c"], ["c2"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("c2", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x2" if with_body_nodes else "x", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    loop = helper.make_node("Loop", ["", "cond", "x0"], ["y"], body=body)  # no trip count: runs while cond
    g = helper.make_graph([loop], "g", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                          [helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("with_body_nodes", [True, False])
def test_terminate_stops_a_runaway_loop(with_body_nodes):
    sess = ort.InferenceSession(_runaway_loop(with_body_nodes))
    ro = ort.RunOptions()
    threading.Timer(0.3, lambda: setattr(ro, "terminate", True)).start()
    t0 = time.monotonic()
    with pytest.raises(ort.Fail, match="terminate flag"):
        sess.run(None, {"x0": np.zeros(1, np.float32)}, ro)
    assert time.monotonic() - t0 < 10
    ro.terminate = False  # the session serves the next run
    ro.add_run_config_entry("onnxide.run_timeout_seconds", "0.2")
    with pytest.raises(ort.Fail, match="timeout of 0.2 s"):
        sess.run(None, {"x0": np.zeros(1, np.float32)}, ro)


def test_run_async_honours_the_timeout():
    sess = ort.InferenceSession(_runaway_loop())
    ro = ort.RunOptions()
    ro.add_run_config_entry("onnxide.run_timeout_seconds", "0.2")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a fresh event loop (Playwright may own this one)
        with pytest.raises(ort.Fail, match="timeout"):
            pool.submit(asyncio.run, sess.run_async(None, {"x0": np.zeros(1, np.float32)}, run_options=ro)).result()


def test_a_terminated_flag_before_the_run_stops_it_at_once():
    sess = ort.InferenceSession(_runaway_loop())
    ro = ort.RunOptions()
    ro.terminate = True
    with pytest.raises(ort.Fail, match="terminate flag"):
        sess.run(None, {"x0": np.zeros(1, np.float32)}, ro)
