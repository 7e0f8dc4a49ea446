#!/usr/bin/env bash
# Installs what onnxide's main job needs on a fresh machine (registries only), idempotently: the package with its
# test extras, the native CPU kernels (gcc, built for this CPU), the WASM toolchain + kernel builds, the WebGPU EP's
# Vulkan driver (lavapipe) and wgpu-py, the browser stack (Chromium, Pyodide, the onnxide wheel).
# The tests also run .ci/setup_models.sh (frameworks and the real-model packages).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e ".[test]"
bash native_eps/cpu_kernels/build.sh
bash .ci/setup_wasm.sh
bash .ci/setup_webgpu.sh
bash .ci/setup_web.sh
