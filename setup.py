"""Package layout (metadata is in pyproject.toml): the engine from py_engine/, the native EPs from native_eps/, and
the WGSL kernels of webgpu_shaders/ as the package onnxide_wgsl (pyproject alone cannot map a third root)."""
from setuptools import find_packages, setup

setup(
    packages=find_packages("py_engine") + find_packages("native_eps") + ["onnxide_wgsl"],
    package_dir={"": "py_engine", "onnxide_native": "native_eps/onnxide_native", "onnxide_wgsl": "webgpu_shaders"},
    package_data={"onnxide_wgsl": ["*.wgsl"]},
)
