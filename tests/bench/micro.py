"""Micro-measurements behind docs/design.md's "Native speed" notes: the numpy costs the kernels are shaped around,
and the native CPU EP's kernels next to the numpy kernels they replace.

usage: python tests/bench/micro.py
Prints medians in µs/ms; no assertions (tests assert results, not timings). Needs threadpoolctl (installed with
.[test]) and 2+ cores for the thread rows.
"""
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "py_engine"))

from onnxide.ops import conv, conv_winograd  # noqa: E402


def median_ms(fn, n=30):
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def row(what, ms):
    print(f"  {what:62s} {ms * 1e3:9.1f} µs" if ms < 1 else f"  {what:62s} {ms:9.3f} ms")


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 128, 1536)).astype(np.float32)
    y = np.empty_like(x)
    mask = x < 0.5
    print("element-wise, 196,608 float32 (a MiniLM GELU input):")
    row("np.multiply(x, 2, out=y)", median_ms(lambda: np.multiply(x, 2, out=y)))
    row("np.copyto(y, x, where=mask)  (masked)", median_ms(lambda: np.copyto(y, x, where=mask)))
    row("np.clip(x, 0, 1)", median_ms(lambda: np.clip(x, 0, 1)))
    row("np.minimum(np.maximum(x, 0), 1)", median_ms(lambda: np.minimum(np.maximum(x, 0), 1)))

    with threadpool_limits(1):
        print("sgemm GFLOP/s, one BLAS thread:")
        for m_, k_, n_ in [(1024, 1024, 1024), (128, 384, 384), (128, 384, 1536), (128, 1536, 384)]:
            a_, b_ = rng.standard_normal((m_, k_)).astype(np.float32), rng.standard_normal((k_, n_)).astype(np.float32)
            ms = median_ms(lambda: a_ @ b_, 20)
            print(f"  {m_}×{k_} @ {k_}×{n_}: {2 * m_ * k_ * n_ / ms / 1e6:6.1f} GFLOP/s")
        print("GEMM (1,512) @ (512,1000), one BLAS thread:")
        a = rng.standard_normal((1, 512)).astype(np.float32)
        raw = np.empty(512 * 1000 * 4 + 2, np.uint8)
        misaligned = raw[2:].view(np.float32).reshape(512, 1000)  # like a weight at an odd offset of the model bytes
        misaligned[...] = rng.standard_normal((512, 1000))
        aligned = misaligned.copy()
        row(f"aligned weight", median_ms(lambda: a @ aligned))
        row(f"misaligned weight (flags.aligned={misaligned.flags.aligned})", median_ms(lambda: a @ misaligned))

    pool = ThreadPoolExecutor(1)
    pool.submit(int).result()
    print("Python threads:")
    row("ThreadPoolExecutor submit + result round trip", median_ms(lambda: pool.submit(int).result(), 200))
    m = rng.standard_normal((128, 384)).astype(np.float32)
    w = rng.standard_normal((384, 1536)).astype(np.float32)
    out = np.empty((128, 1536), np.float32)

    def halves():
        f = pool.submit(np.matmul, m[64:], w, out=out[64:])
        np.matmul(m[:64], w, out=out[:64])
        f.result()

    with threadpool_limits(1):
        row("(128,384)@(384,1536), 1 BLAS thread", median_ms(lambda: np.matmul(m, w, out=out)))
        row("same, row halves on 2 Python threads, 1 BLAS thread each", median_ms(halves))
    with threadpool_limits(2):
        row("same, 2 BLAS threads", median_ms(lambda: np.matmul(m, w, out=out)))

    print("silero VAD's small kernels (numpy, one BLAS thread):")
    from onnxide.ops import registry
    lstm = registry.lookup("", "LSTM", 14).kernel
    pad = registry.lookup("", "Pad", 18).kernel
    seq, h0, c0 = (rng.standard_normal(s_).astype(np.float32) for s_ in [(1, 1, 128), (1, 1, 128), (1, 1, 128)])
    wl, rl = (rng.standard_normal((1, 512, 128)).astype(np.float32) * 0.1 for _ in range(2))
    bl = rng.standard_normal((1, 1024)).astype(np.float32) * 0.1
    audio = rng.standard_normal((1, 512)).astype(np.float32)

    class _Ctx:  # what a node's kernel context tells the LSTM: it produces three outputs
        num_outputs = 3
    with threadpool_limits(1):
        row("LSTM, one step, hidden 128, no sequence_lens", median_ms(
            lambda: lstm(seq, wl, rl, bl, None, h0, c0, hidden_size=128, ctx=_Ctx), 200))
        row("Pad (1,512) by 64 at the end, reflect", median_ms(
            lambda: pad(audio, np.array([0, 0, 0, 64]), mode="reflect"), 200))

    print("3×3 conv, Winograd vs im2col (conv_nd), ResNet-18 layer shapes:")
    for c, h in [(64, 56), (128, 28), (256, 14)]:
        xc = rng.standard_normal((1, c, h, h)).astype(np.float32)
        wc = rng.standard_normal((c, c, 3, 3)).astype(np.float32)

        def run():
            return conv.conv_nd(xc, wc, 1, [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], [h, h], "c", fast=True)

        for threads in (1, 2):
            with threadpool_limits(threads):
                conv_winograd.ENABLED = True
                wino = median_ms(run, 15)
                conv_winograd.ENABLED = False
                im2col = median_ms(run, 15)
                conv_winograd.ENABLED = True
            print(f"  {c:3d}×{h}² {threads} BLAS thread(s): Winograd {wino:.2f} ms, im2col {im2col:.2f} ms")
    native_vs_numpy(rng)
    return 0


def native_vs_numpy(rng):
    """The native CPU EP's kernels against the numpy kernels they replace (one BLAS / kernel thread)."""
    import onnxide
    from onnxide.ops import registry
    if "NativeCPUExecutionProvider" not in onnxide.get_available_providers():
        print("native kernels not built: no native rows")
        return
    from onnxide_native import cpu_ops, lib
    nx = lib.load()

    def cpu(domain, op, version):
        return registry.lookup(domain, op, version).kernel

    g = rng.standard_normal((1, 128, 1536)).astype(np.float32)
    s = rng.standard_normal((1, 12, 128, 128)).astype(np.float32)
    p = rng.standard_normal((1, 64, 112, 112)).astype(np.float32)
    pool = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    aq, ak, av = (rng.standard_normal((1, 128, 384)).astype(np.float32) for _ in range(3))
    attn_out = np.empty((1, 128, 384), np.float32)
    bn_x = rng.standard_normal((1, 24, 160, 160)).astype(np.float32)
    bn = [rng.random(24).astype(np.float32) + 0.5 for _ in range(4)]
    ct_x = rng.standard_normal((1, 24, 80, 80)).astype(np.float32)
    ct_w = rng.standard_normal((24, 24, 2, 2)).astype(np.float32)
    ct_w.flags.writeable = False
    vad_x = rng.standard_normal((1, 129, 3)).astype(np.float32)
    vad_w = rng.standard_normal((128, 129, 3)).astype(np.float32)
    dw_x = rng.standard_normal((1, 48, 80, 80)).astype(np.float32)
    dw_w = rng.standard_normal((48, 1, 3, 3)).astype(np.float32)
    dw7_x = rng.standard_normal((1, 576, 7, 7)).astype(np.float32)  # MobileNetV3's last depthwise: 8 channels a time
    dw7_w = rng.standard_normal((576, 1, 5, 5)).astype(np.float32)
    p2 = rng.standard_normal((1, 16, 64, 64)).astype(np.float32)  # the README CNN's first MaxPool
    pool2 = {"kernel_shape": [2, 2], "strides": [2, 2]}
    pw_x = rng.standard_normal((1, 16, 56, 56)).astype(np.float32)  # MobileNetV3's 16→72 1×1 conv: a raw B
    pw_w = rng.standard_normal((72, 16, 1, 1)).astype(np.float32)
    pw_w.flags.writeable = False
    big = rng.standard_normal((1, 32, 160, 160)).astype(np.float32)
    chan = rng.standard_normal((1, 32, 1, 1)).astype(np.float32)
    convs = []  # ResNet-18 / PP-OCR layers: (what, x, w, pads, strides), weights read-only like initializers
    for what, c, h, m, k, st in [("conv 64→64 3×3 at 56² (Winograd)", 64, 56, 64, 3, 1),
                                 ("conv 3→64 7×7/2 at 224² (stem)", 3, 224, 64, 7, 2),
                                 ("conv 96→24 3×3 at 80² (shifted rows)", 96, 80, 24, 3, 1),
                                 ("conv 512→512 3×3 at 7²", 512, 7, 512, 3, 1),
                                 ("conv 16→32 3×3 at 32² (README CNN)", 16, 32, 32, 3, 1),
                                 ("conv 96→576 1×1 at 7² (few-column GEMM)", 96, 7, 576, 1, 1)]:
        wc = rng.standard_normal((m, c, k, k)).astype(np.float32)
        wc.flags.writeable = False
        convs.append((what, rng.standard_normal((1, c, h, h)).astype(np.float32), wc, [k // 2] * 4, [st, st]))
    from onnxide.runtime.threads import blas_threads
    for threads in (1, 2):
        with blas_threads(threads, own_threads=True):  # as a native-EP session runs: OpenBLAS on one thread
            print(f"native kernels vs numpy kernels (ms), {threads} thread(s) (numpy's GEMMs: OpenBLAS on one):")
            for what, native, numpy_ in [
                    ("GELU (1,128,1536)", lambda: cpu_ops.act(nx, g, cpu_ops.ACT["gelu"]),
                     lambda: cpu(registry.MS_DOMAIN, "Gelu", 1)(g)),
                    ("softmax (1,12,128,128), last axis", lambda: cpu_ops.softmax(nx, s, -1, False, False),
                     lambda: cpu("", "Softmax", 13)(s)),
                    ("MaxPool 3×3/2 (1,64,112,112)", lambda: cpu_ops.max_pool(nx, p, **pool),
                     lambda: cpu("", "MaxPool", 12)(p, **pool)),
                    ("MaxPool 2×2/2 (1,16,64,64)", lambda: cpu_ops.max_pool(nx, p2, **pool2),
                     lambda: cpu("", "MaxPool", 12)(p2, **pool2)),
                    ("depthwise 3×3 conv (1,48,80,80)", lambda: cpu_ops.conv(nx, dw_x, dw_w, group=48, pads=[1] * 4),
                     lambda: cpu("", "Conv", 11)(dw_x, dw_w, group=48, pads=[1] * 4)),
                    ("depthwise 5×5 conv (1,576,7,7)", lambda: cpu_ops.conv(nx, dw7_x, dw7_w, group=576, pads=[2] * 4),
                     lambda: cpu("", "Conv", 11)(dw7_x, dw7_w, group=576, pads=[2] * 4)),
                    ("1×1 conv 16→72 at 56² (B packed per call)", lambda: cpu_ops.conv(nx, pw_x, pw_w),
                     lambda: cpu("", "Conv", 11)(pw_x, pw_w)),
                    ("Add (1,32,160,160) + (1,32,1,1)", lambda: cpu_ops.binary(nx, 0, big, chan),
                     lambda: np.add(big, chan)),
                    ("BatchNormalization (1,24,160,160)", lambda: cpu_ops.batch_norm(nx, bn_x, *bn),
                     lambda: cpu("", "BatchNormalization", 15)(bn_x, *bn)),
                    ("ConvTranspose 24→24 2×2/2 at 80²", lambda: cpu_ops.conv_transpose(
                        nx, ct_x, ct_w, kernel_shape=[2, 2], strides=[2, 2]),
                     lambda: cpu("", "ConvTranspose", 11)(ct_x, ct_w, kernel_shape=[2, 2], strides=[2, 2])),
                    ("attention 12 heads (1,128,384)", lambda: nx.nx_attention(
                        1, 128, 128, 12, 32, 32, aq.ctypes.data, ak.ctypes.data, av.ctypes.data, None, 0, 0,
                        32 ** -0.5, attn_out.ctypes.data, threads),
                     lambda: _numpy_attention(cpu_ops, nx, aq, ak, av))]:
                print(f"  {what:40s} native {median_ms(native):7.3f}   numpy {median_ms(numpy_):7.3f}")
            for what, xs, ws, pads, strides in convs:
                print(f"  {what:40s} native {median_ms(lambda: cpu_ops.conv(nx, xs, ws, pads=pads, strides=strides)):7.3f}"
                      f"   numpy {median_ms(lambda: cpu('', 'Conv', 11)(xs, ws, pads=pads, strides=strides)):7.3f}")
            gemms = []
            for m_, k_, n_ in [(128, 384, 384), (128, 384, 1536), (128, 1536, 384), (1024, 1024, 1024)]:
                a_ = rng.standard_normal((m_, k_)).astype(np.float32)
                b_ = rng.standard_normal((k_, n_)).astype(np.float32)
                b_.flags.writeable = False  # a weight: packed once
                gemms.append((m_, k_, n_, median_ms(lambda: cpu_ops.matmul(nx, a_, b_)), a_, b_))
            with threadpool_limits(threads):  # after the native runs: OpenBLAS's spinning workers would slow them
                for m_, k_, n_, native_ms, a_, b_ in gemms:
                    fl = 2 * m_ * k_ * n_
                    print(f"  MatMul {m_}×{k_} @ {k_}×{n_} GFLOP/s: native {fl / native_ms / 1e6:6.1f}   OpenBLAS "
                          f"({threads} thread(s)) {fl / median_ms(lambda: a_ @ b_) / 1e6:6.1f}")
            if threads == 1:
                _packed_b_alignment(nx, rng)
                _one_chain_run()
            if threads == 1:  # numpy only: silero VAD's 1-D conv through the gathered path and through im2col
                small = median_ms(lambda: conv.conv(vad_x, vad_w, pads=[1, 1]))
                saved, conv.SMALL_GATHER = conv.SMALL_GATHER, 0
                row("silero VAD conv 129→128, k3, 3 positions: gathered columns", small)
                row("  the same through im2col (SMALL_GATHER = 0)",
                    median_ms(lambda: conv.conv(vad_x, vad_w, pads=[1, 1])))
                conv.SMALL_GATHER = saved


def _packed_b_alignment(nx, rng, m=128, k=384, n=1536):
    """nx_gemm with its packed B panels on a 64-byte boundary (as cpu_ops.packed_b allocates them) and 16 bytes
    past one (numpy's own alignment): a 32-byte load then straddles two cache lines."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    size = nx.nx_gemm_packed_size(k, n)
    raw = np.empty(size + 32, np.float32)
    start = (-raw.ctypes.data % 64) // 4
    print(f"  nx_gemm {m}×{k} @ {k}×{n}, B packed (GFLOP/s):")
    for what, offset in (("panels 64-byte aligned", 0), ("panels 16 bytes past 64", 4)):
        bp = raw[start + offset:start + offset + size]
        nx.nx_gemm_pack_b(k, n, b.ctypes.data, n, 1, bp.ctypes.data)
        ms = median_ms(lambda: nx.nx_gemm(m, n, k, a.ctypes.data, k, None, None, 0, bp.ctypes.data, c.ctypes.data,
                                          n, None, None, None, 0, 0, 0.0, 0.0, None, 1))
        print(f"    {what:38s} {2 * m * k * n / ms / 1e6:6.1f}")


def _one_chain_run():
    """session.run of the benchmark's MLP 64-256-256-10, whose plan is one native chain (Executor._run_single)."""
    import onnxide
    from run_bench import _mlp_bytes
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = 1
    sess = onnxide.InferenceSession(_mlp_bytes(), so)
    x = {"x": np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)}
    row("session.run, MLP 64-256-256-10 (one native chain)", median_ms(lambda: sess.run(None, x), 2000))


def _numpy_attention(cpu_ops, nx, q, k, v):
    """cpu_ops.attention's one-thread form: numpy's batched GEMMs around the native softmax."""
    saved, cpu_ops.NATIVE_ATTENTION = cpu_ops.NATIVE_ATTENTION, False
    try:
        return cpu_ops.attention(nx, q, k, v, 12, None)
    finally:
        cpu_ops.NATIVE_ATTENTION = saved


if __name__ == "__main__":
    sys.exit(main())
