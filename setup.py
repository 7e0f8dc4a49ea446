"""Package layout (metadata is in pyproject.toml): the engine from py_engine/, the native EPs from native_eps/ (when
present: the browser's wheel is built without them), and the WGSL kernels of webgpu_shaders/ as the package
onnxide_wgsl (pyproject alone cannot map a third root). A wheel built with native_eps/ compiles the native CPU kernels
into onnxide_native/ (native_eps/cpu_kernels/build.py: one library per x86-64 level, chosen at load time) and is
tagged for this platform; with no C compiler (or ONNXIDE_BUILD_NATIVE=0) it says so and stays pure Python, and the
package runs on numpy alone. Editable installs leave the kernels to native_eps/cpu_kernels/build.sh."""
import importlib.util
import os
import sys
import tempfile

from setuptools import Distribution, find_packages, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "native_eps", "cpu_kernels", "build.py")

packages = find_packages("py_engine") + ["onnxide_wgsl"]
package_dir = {"": "py_engine", "onnxide_wgsl": "webgpu_shaders"}
if os.path.isdir("native_eps"):
    packages += find_packages("native_eps")
    package_dir["onnxide_native"] = "native_eps/onnxide_native"


def _kernel_build():
    """native_eps/cpu_kernels/build.py as a module, or None when this tree has no native kernels."""
    if not os.path.isfile(KERNELS):
        return None
    spec = importlib.util.spec_from_file_location("_nx_build", KERNELS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _native_builder():
    """(the kernel builder, None) when this wheel compiles the native kernels, else (None, why not: None when the
    tree has no native kernels)."""
    kb = _kernel_build()
    if kb is None:
        return None, None
    if os.environ.get("ONNXIDE_BUILD_NATIVE") == "0":
        return None, "onnxide: ONNXIDE_BUILD_NATIVE=0: no native CPU kernels in this wheel (numpy only)"
    if kb.compiler() is None:
        return None, ("onnxide: WARNING: no C compiler ($CC, gcc or cc): this wheel has no native CPU kernels; "
                      "NativeCPUExecutionProvider will be unavailable and the numpy CPU EP runs every node")
    return kb, None


class BuildPyWithKernels(build_py):
    """build_py, then the native kernels compiled into the build's onnxide_native/ (not for editable installs)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = os.path.join(self.build_lib, "onnxide_native")
        for name in os.listdir(dest) if os.path.isdir(dest) else []:
            if name.startswith("libonnxide_cpu"):  # an earlier build's, left in build/lib
                os.remove(os.path.join(dest, name))
        kb, why_not = _native_builder()
        if why_not:
            print(why_not, file=sys.stderr)
        if kb is None:
            return
        with tempfile.TemporaryDirectory() as tmp:
            try:
                built = kb.build(tmp, quiet=True)
            except kb.BuildError as e:
                sys.exit(f"onnxide: the native CPU kernels did not compile (set ONNXIDE_BUILD_NATIVE=0 to build "
                         f"without them):\n{e}")
            for path in built:
                self.copy_file(path, os.path.join(dest, os.path.basename(path)))


class NativeDistribution(Distribution):
    """Holds compiled code (the kernels) when they are built: the wheel installs into platlib and is tagged for this
    platform."""

    def has_ext_modules(self):
        return _native_builder()[0] is not None


class BdistWheelNative(bdist_wheel):
    """A wheel holding the compiled kernels is for this platform but any Python 3 (they are loaded with ctypes)."""

    def get_tag(self):
        python, abi, plat = super().get_tag()
        return (python, abi, plat) if self.root_is_pure else ("py3", "none", plat)


setup(packages=packages, package_dir=package_dir,
      package_data={"onnxide_wgsl": ["*.wgsl"]},
      distclass=NativeDistribution, cmdclass={"build_py": BuildPyWithKernels, "bdist_wheel": BdistWheelNative})
