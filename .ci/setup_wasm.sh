#!/usr/bin/env bash
# Installs what the WASM execution provider needs natively (clang-19 + lld-19 from apt, wasmtime from pip) and
# builds the two kernel modules into build/wasm/ (again only when their sources or the compiler changed). Idempotent;
# registries only.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
if ! command -v clang-19 >/dev/null 2>&1 || ! command -v wasm-ld-19 >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" != "0" ] && SUDO="sudo"
    $SUDO apt-get install -y -q clang-19 lld-19 >/dev/null || { $SUDO apt-get update -q >/dev/null && \
        $SUDO apt-get install -y -q clang-19 lld-19 >/dev/null; }
fi
python3 -c "import wasmtime" 2>/dev/null || pip_install wasmtime
OUT="${OX_WASM_OUT:-build/wasm}"
HASH="$( (tree_hash wasm_kernels py_engine/onnxide/ops/activations.py; clang-19 --version) | sha256sum | cut -c1-64)"
if up_to_date "$OUT/build.stamp" "$HASH" "$OUT/onnxide_kernels_simd128.wasm" "$OUT/onnxide_kernels_relaxed.wasm"; then
    echo "[setup_wasm] kernel modules up to date in $OUT"
else
    bash wasm_kernels/build.sh --no-install
    echo "$HASH" > "$OUT/build.stamp"
fi
