"""Runtime: execution providers, the per-session execution plan, and the onnxruntime-compatible session API."""
