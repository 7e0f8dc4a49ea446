"""CI gate: the ONNX backend cases on the CPU EP, and on the native CPU EP where its library is built, must pass at
least the recorded floor (floors.json only rises)."""
import json
import os

import pytest

import onnxide
from conformance.cases import load_cases
from conformance.run_backend import LEVELS, run_case

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("provider", ["CPUExecutionProvider", "NativeCPUExecutionProvider"])
def test_pass_count_reaches_floor(provider):
    if provider not in onnxide.get_available_providers():
        pytest.skip(f"{provider} is not built here (native_eps/cpu_kernels/build.sh)")
    with open(os.path.join(HERE, "floors.json")) as f:
        floor = json.load(f)[provider]
    cases = load_cases()
    assert len(cases) == 2033
    failed = []
    for c in cases:
        ok, why = run_case(c, provider, LEVELS["all"], 120)
        if not ok:
            failed.append(f"{c.name}: {why}")
    passed = len(cases) - len(failed)
    print(f"\n{provider} backend conformance: {passed} / {len(cases)} (floor {floor})")
    assert passed >= floor, f"{passed} passed < floor {floor}; failing: {failed[:20]}"
