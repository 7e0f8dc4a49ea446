"""WGSL kernel templates of the WebGPU execution provider (installed as the package onnxide_wgsl; read by
onnxide.eps.webgpu.programs)."""
