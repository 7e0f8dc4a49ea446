"""onnxruntime's `capi` package layout over onnxide's own modules."""
