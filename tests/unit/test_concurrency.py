"""Concurrent runs: one session serves them exactly (each run, and each body call inside it, has its own values, so
threads sharing a session with If / Loop get the outputs a lone run gets, bit for bit), and sessions running at once
in different threads each compute with their own thread count."""
import threading

import numpy as np
from onnx import TensorProto, helper

import onnxide as ort


def _if_loop_model():
    then_b = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])])
    else_b = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4])])
    body = helper.make_graph(
        [helper.make_node("Add", ["h", "y"], ["h2"]), helper.make_node("Identity", ["c"], ["c2"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("c2", TensorProto.BOOL, []), helper.make_tensor_value_info("h2", TensorProto.FLOAT, [4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["pos"]),
             helper.make_node("If", ["pos"], ["y"], then_branch=then_b, else_branch=else_b),
             helper.make_node("Loop", ["n", "", "x"], ["out"], body=body)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                                       helper.make_tensor_value_info("n", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4])],
                          [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def run_in_threads(sess, feeds, want, runs, threads=8):
    """Each of `threads` threads runs `sess` on its feeds[k] `runs` times, all starting together; returns the
    failures (repr of an exception, or k when any output differs from want[k] in any bit)."""
    bad, start = [], threading.Barrier(threads)

    def work(k):
        start.wait()
        for _ in range(runs):
            try:
                got = sess.run(None, feeds[k])
            except Exception as e:  # noqa: BLE001 - any exception is a failure of the test
                bad.append(repr(e))
                continue
            if any(g.tobytes() != w.tobytes() for g, w in zip(got, want[k])):
                bad.append(k)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return bad


def test_eight_threads_share_a_session_with_if_and_loop():
    sess = ort.InferenceSession(_if_loop_model())
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal(4).astype(np.float32), "n": np.array(k % 5 + 1, np.int64)} for k in range(8)]
    want = [sess.run(None, f) for f in feeds]
    bad = run_in_threads(sess, feeds, want, 150)
    assert not bad, bad[:5]


def test_sessions_running_at_once_in_two_threads_keep_their_thread_counts():
    """A one-thread session's kernels read 1 even while a three-thread session runs in another thread (the running
    count is per application thread): each probe waits inside its run until the other run is inside its own."""
    from onnxide.extensions import get_library_path, onnx_op
    from onnxide.ops import custom
    from onnxide.runtime import threads

    saved = dict(custom.DECLARED)
    inside = {1: threading.Event(), 3: threading.Event()}
    read = {1: threading.Event(), 3: threading.Event()}
    seen = []

    @onnx_op(op_type="ThreadProbe")
    def probe(x):  # x: the count this run's session was given
        mine = int(x[0])
        inside[mine].set()
        inside[4 - mine].wait(30)  # (the other session: 1 <-> 3) is inside its run too
        seen.append((mine, threads.current()))
        read[mine].set()
        read[4 - mine].wait(30)  # and stays there until this one has read
        return x

    try:
        nodes = [helper.make_node("ThreadProbe", ["x"], ["y"], domain="ai.onnx.contrib")]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.contrib", 1)]).SerializeToString()

        def session(n):
            so = ort.SessionOptions()
            so.intra_op_num_threads = n
            so.register_custom_ops_library(get_library_path())
            return ort.InferenceSession(model, so)

        runs = [threading.Thread(target=session(n).run, args=(None, {"x": np.full(2, n, np.float32)}))
                for n in (1, 3)]
        for t in runs:
            t.start()
        for t in runs:
            t.join(60)
        assert sorted(seen) == [(1, 1), (3, 3)]
    finally:
        custom.DECLARED.clear()
        custom.DECLARED.update(saved)
