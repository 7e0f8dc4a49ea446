#!/usr/bin/env bash
# Installs what the WASM execution provider needs natively (clang-19 + lld-19 from apt, wasmtime from pip) and
# builds the two kernel modules into build/wasm/. Idempotent; registries only.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-19 >/dev/null 2>&1 || ! command -v wasm-ld-19 >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" != "0" ] && SUDO="sudo"
    $SUDO apt-get install -y -q clang-19 lld-19 >/dev/null || { $SUDO apt-get update -q >/dev/null && \
        $SUDO apt-get install -y -q clang-19 lld-19 >/dev/null; }
fi
python3 -c "import wasmtime" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check wasmtime
bash wasm_kernels/build.sh --no-install
