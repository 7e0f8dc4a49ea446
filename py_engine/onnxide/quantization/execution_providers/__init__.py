"""Execution-provider-specific quantization configs of onnxruntime's tool (`execution_providers.qnn`)."""
