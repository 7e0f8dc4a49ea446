"""Execution providers for a batch actor: a GPU actor runs CUDA or WebGPU where this node has it, else the CPU."""
_GPU = ("CUDAExecutionProvider", "WebGpuExecutionProvider")


def actor_providers(providers=None, gpu=False):
    """providers as given; else, on a GPU actor, the first GPU EP available here ahead of the CPU EPs; else the
    session's default (native CPU kernels, then numpy)."""
    if providers:
        return list(providers)
    if not gpu:
        return None
    import onnxide

    here = onnxide.get_available_providers()
    return [p for p in _GPU if p in here][:1] + [p for p in here if p not in _GPU and p != "WasmExecutionProvider"]
