"""Other kernels on the WebGPU device."""
