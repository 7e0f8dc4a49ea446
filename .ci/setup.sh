#!/usr/bin/env bash
# Installs what onnxide's main job needs on a fresh machine (registries only), idempotently (a second run redoes
# nothing that is done): the package with its test extras (pip: into the active virtual environment; outside one only
# with ONNXIDE_SYSTEM_PIP=1, see .ci/lib.sh), the native CPU kernels (gcc; one build per x86-64 level), the WASM
# toolchain + kernel builds, the WebGPU EP's Vulkan driver (lavapipe) and wgpu-py, the browser stack (Chromium,
# Pyodide, the onnxide wheel).
# The tests also run .ci/setup_models.sh (frameworks and the real-model packages).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
need -e ".[test]"
bash native_eps/cpu_kernels/build.sh
bash .ci/setup_wasm.sh
bash .ci/setup_webgpu.sh
bash .ci/setup_web.sh
