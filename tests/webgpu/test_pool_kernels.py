"""WebGPU MaxPool (with Indices), AveragePool, LpPool and the Global* pools (ops_pool.py) against the CPU EP."""
import numpy as np
import pytest

from webgpu.nodes import check

rng = np.random.default_rng(13)


def rand(*shape, dtype=np.float32, nan=False):
    x = rng.standard_normal(shape).astype(dtype)
    if nan:
        x.reshape(-1)[::17] = np.nan
    return x


WINDOWS = [
    ((2, 3, 9, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 3, 9, 10), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1], "ceil_mode": 1}),
    ((1, 2, 9, 10), {"kernel_shape": [3, 2], "strides": [2, 3], "dilations": [2, 2]}),
    ((1, 2, 10, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "dilations": [2, 1], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 11), {"kernel_shape": [3], "strides": [2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 2], "ceil_mode": 1, "strides": [2, 2, 2]}),
    ((1, 4, 32, 17), {"kernel_shape": [5, 4], "strides": [3, 3], "pads": [2, 1, 2, 3], "ceil_mode": 1}),
]


@pytest.mark.parametrize("shape,attrs", WINDOWS)
def test_max_pool(shape, attrs):
    check("MaxPool", [rand(*shape, nan=True)], exact=True, **attrs)


@pytest.mark.parametrize("shape,attrs", WINDOWS)
@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(shape, attrs, storage_order):
    check("MaxPool", [rand(*shape)], outputs=("y", "ind"), exact=True, storage_order=storage_order, **attrs)


@pytest.mark.parametrize("shape,attrs", WINDOWS)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(shape, attrs, count_include_pad):
    check("AveragePool", [rand(*shape)], opset=19, count_include_pad=count_include_pad, **attrs)  # (dilations: 19)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape,attrs", WINDOWS[:4])
def test_lp_pool(shape, attrs, p):
    check("LpPool", [rand(*shape, nan=p == 3)], p=p, **attrs)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 5, 33), (1, 2, 3, 4, 5)])
def test_global_pools(op, shape):
    check(op, [rand(*shape)])


def test_f16_and_integer_pools():
    h = np.float16
    check("MaxPool", [rand(1, 3, 9, 9, dtype=h)], exact=True, kernel_shape=[3, 3], strides=[2, 2])
    check("AveragePool", [rand(1, 3, 9, 9, dtype=h)], rtol=2e-3, atol=2e-3, kernel_shape=[2, 2], pads=[1, 1, 0, 0])
    check("GlobalAveragePool", [rand(1, 3, 9, 9, dtype=h)], rtol=2e-3, atol=2e-3)
    x = rng.integers(0, 255, (1, 2, 6, 6)).astype(np.uint8)
    check("MaxPool", [x], exact=True, on_device=False, kernel_shape=[2, 2])
