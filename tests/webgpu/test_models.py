"""Every real model on the WebGPU EP (natively through wgpu-py; lavapipe in CI) against the CPU EP: same outputs
within tolerance (the streaming models' recurrent state carried, silero VAD's included), with the share of nodes
that ran on the GPU and what crossed the border recorded in .cache/models/webgpu_models.json
(tests/webgpu/report.py renders docs/webgpu-models.md)."""
import json
import os

import numpy as np
import pytest

import onnxide
from device.test_mock_models import PRETRAINED, _steps
from models import export, fetch
from models.common import as_array
from models.test_pretrained import model_path

WEBGPU = "WebGpuExecutionProvider"
OUT = os.path.join(fetch.CACHE, "webgpu_models.json")
ATOL, RTOL = 1e-3, 1e-3  # GPU float32 math (other summation orders, WGSL's exp / tanh) against numpy's
# the big CNNs take ~30 s each on lavapipe: CI runs the others; ONNXIDE_WEBGPU_HEAVY=1 runs these too
HEAVY = {"rapidocr/det", "rapidocr/rec", "openwakeword/embedding_model", "exported/resnet18_dynamo",
         "exported/resnet18_torchscript"}


def _heavy(key):
    if key in HEAVY and not os.environ.get("ONNXIDE_WEBGPU_HEAVY"):
        pytest.skip("a big CNN on a CPU Vulkan driver (~30 s): ONNXIDE_WEBGPU_HEAVY=1 runs it")


def _run(key, path, feed_list, carry):
    cpu = onnxide.InferenceSession(path, providers=["CPUExecutionProvider"])
    gpu = onnxide.InferenceSession(path, providers=[WEBGPU])
    steps = [s for s in _steps(gpu._executor.main_plan) if not s.is_transfer]
    worst, runs, prev, prev_cpu = 0.0, 0, None, None
    for feeds in feed_list:
        f_gpu, f_cpu = (feeds, feeds) if carry is None or not runs else (carry(feeds, prev), carry(feeds, prev_cpu))
        prev, prev_cpu = gpu.run(None, f_gpu), cpu.run(None, f_cpu)
        for g, w in zip(prev, prev_cpu):
            g, w = as_array(g), as_array(w)
            assert g.shape == w.shape and g.dtype == w.dtype, key
            if g.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=key)
                worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w), initial=0)))
            else:
                np.testing.assert_array_equal(g, w, err_msg=key)
        runs += 1
    return {"nodes_on_gpu": sum(not s.device.is_host for s in steps), "nodes_on_host": sum(s.device.is_host
                                                                                           for s in steps),
            "transfer_steps": sum(s.is_transfer for s in _steps(gpu._executor.main_plan)), "runs": runs,
            "max_abs_diff": worst, "host_ops": sorted({s.node.op_type for s in steps if s.device.is_host})}


def _record(key, stats):
    found = {}
    if os.path.isfile(OUT):
        with open(OUT) as f:
            found = json.load(f)
    found[key] = stats
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(found, f, indent=1, sort_keys=True)


@pytest.mark.parametrize("key", sorted(PRETRAINED))
def test_pretrained_model_on_webgpu(key):
    _heavy(key)
    (pkg, name), feeds, carry = PRETRAINED[key]
    _record(key, _run(key, model_path(pkg, name), list(feeds()), carry))


@pytest.mark.parametrize("name", export.TORCH_MODELS)
def test_exported_model_on_webgpu(name):
    _heavy(f"exported/{name}")
    why = export.available(name)
    if why:
        pytest.skip(why)
    path, feeds, _, _ = export.load(name)
    _record(f"exported/{name}", _run(name, path, [feeds], None))
