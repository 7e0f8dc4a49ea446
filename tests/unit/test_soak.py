"""Bounded soak tests (issue 19): 8 threads sharing one session on a conv net, a transformer block and an If / Loop
model on every EP here, outputs bit for bit those of one thread; RSS flat over many runs and create / destroy cycles.

CI counts are small; ONNXIDE_SOAK=1 runs the issue's full counts (8 x 1,000 runs, 10,000 runs, 200 cycles)."""
import gc
import os

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxide
from test_concurrency import _if_loop_model, run_in_threads

FULL = os.environ.get("ONNXIDE_SOAK") == "1"
RUNS_PER_THREAD, RSS_RUNS, CYCLES = (1000, 10000, 200) if FULL else (40, 400, 30)
EPS = [p for p in ("CPUExecutionProvider", "NativeCPUExecutionProvider", "WasmExecutionProvider",
                   "WebGpuExecutionProvider") if p in onnxide.get_available_providers()]
vi = helper.make_tensor_value_info
RNG = np.random.default_rng(19)


def _init(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.2).astype(np.float32), name)


def _model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def conv_net():
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=2),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    inits = [_init("w1", 8, 3, 3, 3), _init("b1", 8), _init("w2", 8, 4, 3, 3), _init("fc", 10, 8)]
    return _model(nodes, [vi("x", T.FLOAT, [1, 3, 16, 16])], [vi("y", T.FLOAT, [1, 10])], inits), \
        lambda k: {"x": np.random.default_rng(k).standard_normal((1, 3, 16, 16)).astype(np.float32)}


def transformer():
    d, h = 16, 2
    nodes = [helper.make_node("LayerNormalization", ["x", "ln_g", "ln_b"], ["n"], axis=-1),
             helper.make_node("MatMul", ["n", "wq"], ["q"]), helper.make_node("MatMul", ["n", "wk"], ["k"]),
             helper.make_node("MatMul", ["n", "wv"], ["v"]),
             helper.make_node("Reshape", ["q", "heads"], ["qh"]), helper.make_node("Reshape", ["k", "heads"], ["kh"]),
             helper.make_node("Reshape", ["v", "heads"], ["vh"]),
             helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["qt", "kt"], ["s"]), helper.make_node("Mul", ["s", "scale"], ["ss"]),
             helper.make_node("Softmax", ["ss"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "vt"], ["a"]),
             helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["at", "flat"], ["af"]), helper.make_node("MatMul", ["af", "wo"], ["o"]),
             helper.make_node("Add", ["x", "o"], ["r"]), helper.make_node("MatMul", ["r", "w1"], ["m1"]),
             helper.make_node("Erf", ["m1"], ["e"]), helper.make_node("Mul", ["m1", "e"], ["m2"]),
             helper.make_node("MatMul", ["m2", "w2"], ["m3"]), helper.make_node("Add", ["r", "m3"], ["y"])]
    inits = [numpy_helper.from_array(np.ones(d, np.float32), "ln_g"), numpy_helper.from_array(np.zeros(d, np.float32),
                                                                                              "ln_b"),
             _init("wq", d, d), _init("wk", d, d), _init("wv", d, d), _init("wo", d, d), _init("w1", d, 4 * d),
             _init("w2", 4 * d, d), numpy_helper.from_array(np.array([1, 8, h, d // h], np.int64), "heads"),
             numpy_helper.from_array(np.array([1, 8, d], np.int64), "flat"),
             numpy_helper.from_array(np.array(1 / np.sqrt(d // h), np.float32), "scale")]
    return _model(nodes, [vi("x", T.FLOAT, [1, 8, d])], [vi("y", T.FLOAT, [1, 8, d])], inits), \
        lambda k: {"x": np.random.default_rng(k).standard_normal((1, 8, d)).astype(np.float32)}


def if_loop():
    return _if_loop_model(), lambda k: {"x": np.random.default_rng(k).standard_normal(4).astype(np.float32) - 0.5,
                                        "n": np.array(k % 5 + 1, np.int64)}


MODELS = {"conv net": conv_net, "transformer": transformer, "If / Loop": if_loop}


def _session(data, ep):
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = 2
    return onnxide.InferenceSession(data, so, providers=[ep])


@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_eight_threads_share_a_session_bit_for_bit(model, ep):
    data, feeds_of = MODELS[model]()
    sess = _session(data, ep)
    feeds = [feeds_of(k) for k in range(8)]
    sess.run(None, feeds[0])  # (the WASM EP packs a constant GEMM operand on its second sighting: last-bit changes)
    want = [sess.run(None, f) for f in feeds]
    runs = RUNS_PER_THREAD if ep != "WebGpuExecutionProvider" or FULL else RUNS_PER_THREAD // 4
    bad = run_in_threads(sess, feeds, want, runs)
    assert not bad, f"{len(bad)} of {8 * runs} runs differ or fail: {bad[:5]}"


def _rss():
    """This process's resident set now, in bytes (not the peak: it must be able to fall back)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _flat(step, count, slack, rounds=3):
    """Runs step() count times after a warm-up of a tenth; the RSS may not grow by more than `slack` bytes over
    the measured part. A leak grows in every round; a one-off allocation (an arena another test's threads left,
    a pool reaching its size) does not, so a round that grew is measured again, up to `rounds` times."""
    for _ in range(max(count // 10, 5)):
        step()
    grown = []
    for _ in range(rounds):
        gc.collect()
        before = _rss()
        for _ in range(count):
            step()
        gc.collect()
        grown.append(_rss() - before)
        if grown[-1] < slack:
            return
    assert False, f"RSS grew {', '.join(f'{g / 2**20:.1f}' for g in grown)} MiB in {rounds} rounds of {count}"


pytestmark_linux = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc/self/statm")


@pytestmark_linux
@pytest.mark.parametrize("ep", [e for e in EPS if e != "WebGpuExecutionProvider"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_rss_stays_flat_over_many_runs(model, ep):
    data, feeds_of = MODELS[model]()
    sess = _session(data, ep)
    feeds = feeds_of(0)
    _flat(lambda: sess.run(None, feeds), RSS_RUNS, 8 << 20)


@pytestmark_linux
@pytest.mark.parametrize("ep", [e for e in EPS if e != "WebGpuExecutionProvider"])
def test_rss_stays_flat_over_session_create_destroy_cycles(ep):
    data, feeds_of = MODELS["transformer"]()
    feeds = feeds_of(0)
    _flat(lambda: _session(data, ep).run(None, feeds), CYCLES, 16 << 20)
