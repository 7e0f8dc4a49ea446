"""The ONNX backend conformance suite: case loading, comparison, the runner and the CI floor gate."""
