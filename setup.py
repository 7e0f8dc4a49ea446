"""Package layout (metadata is in pyproject.toml): the engine from py_engine/, the native EPs from native_eps/ (when
present: the browser's wheel is built without them), and the WGSL kernels of webgpu_shaders/ as the package
onnxide_wgsl (pyproject alone cannot map a third root)."""
import os

from setuptools import find_packages, setup

packages = find_packages("py_engine") + ["onnxide_wgsl"]
package_dir = {"": "py_engine", "onnxide_wgsl": "webgpu_shaders"}
if os.path.isdir("native_eps"):
    packages += find_packages("native_eps")
    package_dir["onnxide_native"] = "native_eps/onnxide_native"

setup(packages=packages, package_dir=package_dir,
      package_data={"onnxide_wgsl": ["*.wgsl"]})
