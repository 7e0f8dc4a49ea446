"""CI gate: the ONNX backend cases on the CPU EP must pass at least the recorded floor (floors.json only rises)."""
import json
import os

from conformance.cases import load_cases
from conformance.run_backend import LEVELS, run_case

HERE = os.path.dirname(os.path.abspath(__file__))


def test_cpu_ep_pass_count_reaches_floor():
    with open(os.path.join(HERE, "floors.json")) as f:
        floor = json.load(f)["CPUExecutionProvider"]
    cases = load_cases()
    assert len(cases) == 2033
    failed = []
    for c in cases:
        ok, why = run_case(c, "CPUExecutionProvider", LEVELS["all"], 120)
        if not ok:
            failed.append(f"{c.name}: {why}")
    passed = len(cases) - len(failed)
    print(f"\nCPU EP backend conformance: {passed} / {len(cases)} (floor {floor})")
    assert passed >= floor, f"{passed} passed < floor {floor}; failing: {failed[:20]}"
