"""CI gate: the ONNX backend cases on the CPU EP, and on the native CPU EP where its library is built, pass every
case their report (docs/conformance/<ep>.json) records as passing — the pass *set* never shrinks — and at least
the floor count (floors.json only rises). The mock device EP (tests/device/) must pass exactly the CPU EP's set,
with its transfer bounds checked on every case."""
import json
import os

import pytest

import onnxide
from conformance.cases import load_cases
from conformance.run_backend import LEVELS, mock_audit, recorded, recorded_passes, run_case

HERE = os.path.dirname(os.path.abspath(__file__))
MOCK = "MockDeviceExecutionProvider"


def _run_all(provider, placed=None):
    cases = load_cases()
    assert len(cases) == 2033
    results = {}
    for c in cases:
        ops = set()
        results[c.name] = run_case(c, provider, LEVELS["all"], 120, ops)
        if placed is not None and results[c.name][0]:
            placed |= {f"{d}::{o}" for d, o in ops}
    return {k for k, (ok, _) in results.items() if ok}, results


@pytest.mark.parametrize("provider", ["CPUExecutionProvider", "NativeCPUExecutionProvider", MOCK])
def test_pass_set_never_shrinks(provider):
    if provider == MOCK:
        mock_audit(MOCK)  # registers the test-only EP
    if provider not in onnxide.get_available_providers():
        pytest.skip(f"{provider} is not built here (native_eps/cpu_kernels/build.sh)")
    passed, results = _run_all(provider)
    reference = recorded_passes("CPUExecutionProvider" if provider == MOCK else provider)
    lost = sorted(reference - passed)
    print(f"\n{provider} backend conformance: {len(passed)} / {len(results)}")
    assert not lost, f"{len(lost)} recorded passes now fail: " + "; ".join(f"{k}: {results[k][1]}" for k in lost[:20])
    if provider == MOCK:
        gained = sorted(passed - reference)
        assert not gained, f"the mock device passes cases the CPU EP fails: {gained[:20]}"
    else:
        with open(os.path.join(HERE, "floors.json")) as f:
            assert len(passed) >= json.load(f)[provider]


def test_webgpu_pass_set_and_ops_on_the_gpu():
    """The WebGPU EP (natively through wgpu-py; lavapipe in CI) passes the CPU EP's recorded set, and every op type
    docs/conformance/webgpu.json records as running on the GPU in a passing case still does."""
    provider = "WebGpuExecutionProvider"
    if provider not in onnxide.get_available_providers():
        pytest.skip("wgpu-py is not installed (pip install wgpu; a Vulkan driver such as mesa-vulkan-drivers)")
    try:
        onnxide.InferenceSession(_tiny_model(), providers=[provider])
    except onnxide.EPFail as e:
        pytest.skip(f"no WebGPU adapter here: {e}")
    placed = set()
    passed, results = _run_all(provider, placed)
    lost = sorted(recorded_passes("CPUExecutionProvider") - passed)
    assert not lost, f"{len(lost)} CPU EP passes fail on WebGPU: " + "; ".join(f"{k}: {results[k][1]}" for k in lost[:20])
    gone = sorted(set(recorded(provider).get("ran_on_device", ())) - placed)
    print(f"\nWebGPU: {len(passed)} / {len(results)} passed, {len(placed)} op types ran on the GPU")
    assert not gone, f"op types no longer running on the GPU: {gone}"


def _tiny_model():
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
