"""CI gate: the ONNX backend cases with WasmExecutionProvider first (natively, wasmtime) pass at least the CPU EP's
recorded floor (tests/conformance/floors.json), and no case the CPU EP passes may fail with the WASM EP."""
import json
import os

import pytest

pytest.importorskip("wasmtime", reason="wasmtime (pip) runs the wasm kernels natively")

import onnxide.eps  # noqa: E402,F401  (registers WasmExecutionProvider)
from onnxide.eps import wasm as wasm_ep  # noqa: E402

if not wasm_ep.available():
    pytest.skip("no wasm kernel build (run wasm_kernels/build.sh)", allow_module_level=True)

from conformance.cases import load_cases  # noqa: E402
from conformance.run_backend import LEVELS, run_case  # noqa: E402

FLOORS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conformance", "floors.json")


def test_wasm_ep_pass_count_reaches_cpu_floor():
    with open(FLOORS) as f:
        floors = json.load(f)
    floor = floors.get("WasmExecutionProvider", floors["CPUExecutionProvider"])
    cases = load_cases()
    failed = []
    for c in cases:
        ok, why = run_case(c, "WasmExecutionProvider", LEVELS["all"], 120)
        if not ok:
            failed.append((c, why))
    cpu_only = []
    for c, why in failed:  # a WASM failure is acceptable only where the CPU EP fails too
        if run_case(c, "CPUExecutionProvider", LEVELS["all"], 120)[0]:
            cpu_only.append(f"{c.name}: {why}")
    passed = len(cases) - len(failed)
    print(f"\nWASM EP backend conformance: {passed} (floor {floor})")
    assert not cpu_only, f"passed on the CPU EP but failed with the WASM EP: {cpu_only[:20]}"
    assert passed >= floor, f"{passed} passed < floor {floor}"
