"""onnxruntime's `capi` package layout over onnxide: `onnxruntime_pybind11_state` (its native module's names),
`_pybind_state` (the same), `onnxruntime_inference_collection` (its Python classes)."""
