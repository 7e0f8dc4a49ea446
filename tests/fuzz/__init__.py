"""Fuzzing campaign: mutated models and an attribute sweep per op, run by every EP and onnxruntime in child processes."""
