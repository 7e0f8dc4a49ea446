"""tests/fuzz/triage.py: onnxruntime's gaps are told apart from the reasons a person must read."""
from fuzz import triage


def test_gaps_are_bucketed_and_other_reasons_kept():
    findings = [("mut:1:1:a:x", "RuntimeError", "Numpy_type 272 can't be converted to MLDataType.", ""),
                ("mut:1:2:b:x", "NotImplemented", "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an "
                                                  "implementation for Swish(24) node with name ''", ""),
                ("mut:1:3:c:x", "Fail", "... Graph attribute inferencing failed: Fatal error: ai.onnx.preview:"
                                        "FlexAttention(-1) is not a registered function/op", ""),
                ("mut:1:4:d:x", "Fail", "Non-zero status code returned while running Slice node. Starts must be a "
                                        "1-D array", "")]
    gaps, rest = triage.triage(findings)
    assert gaps == {"tensor types onnxruntime's Python API cannot hand over": 1,
                    "ops or types without an onnxruntime CPU kernel": 1, "ops onnxruntime does not register": 1}
    assert [r[0] for r in rest] == ["mut:1:4:d:x"] and rest[0][3:] == (None, None)
