"""The native kernels' thread pool (native_eps/cpu_kernels/nx_pool.c): whichever participant runs a chunk, with
workers awake or asleep, from several application threads at once and in a forked child, a model's outputs are the
bits one thread gives."""
import multiprocessing
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide

NATIVE = "NativeCPUExecutionProvider"
pytestmark = pytest.mark.skipif(NATIVE not in onnxide.get_available_providers(),
                                reason="native CPU kernels not built (native_eps/cpu_kernels/build.sh)")
rng = np.random.default_rng(11)


def _model(side=30, stride=1):
    """Conv + ReLU + MaxPool, then MatMul + Softmax: the pool's GEMM tiles, stride planes (each thread's own copy in
    a chain, made as its tiles come), pool planes and rows."""
    w = numpy_helper.from_array(rng.standard_normal((24, 8, 3, 3)).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal((-(-side // stride) // 2, 40)).astype(np.float32), "m")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[stride, stride]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MatMul", ["p", "m"], ["q"]),
             helper.make_node("Softmax", ["q"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, side, side])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, m])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


MODEL = _model()
X = rng.standard_normal((2, 8, 30, 30)).astype(np.float32)


def _session(threads, model=MODEL):
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    return onnxide.InferenceSession(model, so, providers=[NATIVE, "CPUExecutionProvider"])


def _library():
    return _session(1)._providers[0].lib


def _run(threads, times=1, model=MODEL, x=X):
    s = _session(threads, model)
    return [s.run(None, {"x": x})[0] for _ in range(times)]


ONE_THREAD = _run(1)[0]
MAPS = {  # conv output positions: in plane rows (30 wide), in whole groups (32 wide: the max pool in its tiles'
    # loop), of four stride phases
    "30×30": (MODEL, X), "32×32": (_model(32), rng.standard_normal((2, 8, 32, 32)).astype(np.float32)),
    "32×32 stride 2": (_model(32, 2), rng.standard_normal((2, 8, 32, 32)).astype(np.float32))}


@pytest.mark.parametrize("spin_us", [0, 2000])  # workers asleep at every loop / awake between loops
@pytest.mark.parametrize("threads", [2, 3, 5])
@pytest.mark.parametrize("case", sorted(MAPS))
def test_any_participant_gives_the_same_bits(case, threads, spin_us):
    lib = _library()
    model, x = MAPS[case]
    want = ONE_THREAD if model is MODEL else _run(1, model=model, x=x)[0]
    old = lib.nx_set_pool_spin(spin_us)
    try:
        for out in _run(threads, times=5, model=model, x=x):
            np.testing.assert_array_equal(out, want)
    finally:
        lib.nx_set_pool_spin(old)


def test_application_threads_share_the_pool():
    """Four Python threads running two-thread sessions at once: one holds the pool per loop, the others run their
    loops themselves; every output exact."""
    outs, errors = [], []

    def work():
        try:
            outs.extend(_run(2, times=10))
        except Exception as e:  # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(outs) == 40
    for out in outs:
        np.testing.assert_array_equal(out, ONE_THREAD)


def _child(queue):
    queue.put(_run(2, times=3))


def test_forked_child_starts_its_own_workers():
    """A child forked after the parent's workers started (they do not exist in it) runs its two-thread loops to the
    one-thread bits: nothing waits for the parent's workers, a lock the parent held is not held there."""
    _run(2)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    outs = queue.get(timeout=120)
    child.join(30)
    assert child.exitcode == 0
    for out in outs:
        np.testing.assert_array_equal(out, ONE_THREAD)


def _cpu_list(cpus):
    """A CPU set as /proc writes it (ranges: 0-3,6)."""
    ranges, cpus = [], sorted(cpus)
    for c in cpus:
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in ranges)


def _allowed_cpus(task):
    with open(f"/proc/self/task/{task}/status") as f:
        return next(line.split(":", 1)[1].strip() for line in f if line.startswith("Cpus_allowed_list"))


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or not os.path.exists("/proc/self/task")
                    or len(os.sched_getaffinity(0)) < 2, reason="needs Linux CPU sets and two CPUs")
def _other_threads_settle_on(cpus, seconds=5.0):
    """Whether every thread but the main one has CPU set `cpus` within `seconds`: a worker woken late for a loop the
    caller already finished alone still narrows and restores its set, after the caller returned."""
    deadline = time.monotonic() + seconds
    while True:
        others = {_allowed_cpus(t) for t in os.listdir("/proc/self/task") if int(t) != os.getpid()}
        if others == {cpus}:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def test_workers_keep_the_process_cpu_set():
    """A worker woken on its caller's CPU moves itself off it by narrowing its CPU set for a moment (nx_pool.c
    move_off_caller); every worker's set is the process's again afterwards. The caller and every other thread are
    put on one CPU first and a busy process holds the other one, so a worker woken there (spin 0: asleep between
    loops) finds no idle CPU and shares the caller's: the move happens."""
    lib = _library()
    _run(2)  # (the workers exist)
    allowed = os.sched_getaffinity(0)
    one = {min(allowed)}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(busy.pid, allowed - one)
    old = lib.nx_set_pool_spin(0)
    try:
        for _ in range(20):
            for t in os.listdir("/proc/self/task"):  # every thread onto one CPU, the others then free to move
                os.sched_setaffinity(int(t), one)
                if int(t) != os.getpid():
                    os.sched_setaffinity(int(t), allowed)
            for out in _run(2, times=4):
                np.testing.assert_array_equal(out, ONE_THREAD)
            assert _other_threads_settle_on(_cpu_list(allowed)), "a worker kept a narrowed CPU set"
    finally:
        busy.kill()
        busy.wait()
        os.sched_setaffinity(0, allowed)
        lib.nx_set_pool_spin(old)
