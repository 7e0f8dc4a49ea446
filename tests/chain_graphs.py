"""Graphs that both the native and the WASM chain tests build (unit/test_native_chain.py, wasm/test_wasm_chain.py)."""
import numpy as np
from onnx import helper


def dq_matmul_readers(rng, w, k, n, zero_point, per_column, bias=True):
    """(nodes, initializers) of three com.microsoft DynamicQuantizeMatMul reading one x (attention's Q, K, V
    projections) into y0, y1, y2: int8 weights K×N, scales per column or one, zero points when asked, a bias each
    when asked (`w(*shape)` makes the float32 ones)."""
    inits, nodes = [], []
    for i in range(3):
        inits += [(f"B{i}", rng.integers(-128, 128, (k, n)).astype(np.int8)),
                  (f"bs{i}", (rng.random(n if per_column else 1) * 0.01).astype(np.float32)),
                  (f"bz{i}", rng.integers(-5, 5, n if per_column else 1).astype(np.int8)), (f"bias{i}", w(n))]
        ins = ["x", f"B{i}", f"bs{i}", f"bz{i}" if zero_point else "", f"bias{i}" if bias else ""]
        while not ins[-1]:
            ins.pop()
        nodes.append(helper.make_node("DynamicQuantizeMatMul", ins, [f"y{i}"], domain="com.microsoft"))
    return nodes, inits
