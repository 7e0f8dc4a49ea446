"""CI gate: the ONNX backend cases on the CPU EP, and on the native CPU EP where its library is built, pass every
case their report (docs/conformance/<ep>.json) records as passing — the pass *set* never shrinks — and at least
the floor count (floors.json only rises). The mock device EP (tests/device/) must pass exactly the CPU EP's set,
with its transfer bounds checked on every case."""
import json
import os

import pytest

import onnxide
from conformance.cases import load_cases
from conformance.run_backend import LEVELS, mock_audit, recorded_passes, run_case

HERE = os.path.dirname(os.path.abspath(__file__))
MOCK = "MockDeviceExecutionProvider"


def _run_all(provider):
    cases = load_cases()
    assert len(cases) == 2033
    results = {c.name: run_case(c, provider, LEVELS["all"], 120) for c in cases}
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
