#!/usr/bin/env bash
# Builds the onnxide wasm kernels as PIC side modules (Emscripten dylink ABI): a SIMD128 build and a relaxed-SIMD
# build, into build/wasm/ (or $OX_WASM_OUT). Installs clang-19 / lld-19 from apt when they are missing. The OX_ACT_*
# codes are generated first from the activation table (py_engine/onnxide/ops/activations.py, standard library only)
# into the same folder.
# usage: wasm_kernels/build.sh [--no-install]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
OUT="${OX_WASM_OUT:-$ROOT/build/wasm}"
CC="${OX_CLANG:-clang-19}"
PYTHON="${PYTHON:-python3}"

if ! command -v "$CC" >/dev/null 2>&1 || ! command -v wasm-ld-19 >/dev/null 2>&1; then
    if [ "${1:-}" = "--no-install" ]; then
        echo "build.sh: $CC / wasm-ld-19 not found" >&2
        exit 1
    fi
    SUDO=""
    [ "$(id -u)" != "0" ] && SUDO="sudo"
    $SUDO apt-get install -y -q clang-19 lld-19 >/dev/null || { $SUDO apt-get update -q >/dev/null && \
        $SUDO apt-get install -y -q clang-19 lld-19 >/dev/null; }
fi

SOURCES=(ox_gemm.c ox_conv.c ox_winograd.c ox_pool.c ox_norm.c ox_eltwise.c ox_qgemm.c ox_rnn.c ox_chain.c)
CFLAGS=(--target=wasm32-unknown-emscripten -O3 -fPIC -mbulk-memory -ffreestanding -fno-builtin
        -fvisibility=hidden -fno-math-errno -std=c11 -Wall -Wextra -Wno-unused-parameter -Werror -I"$OUT")
# Link without -O: with -O clang-19 runs Debian's old wasm-opt, which rejects relaxed-SIMD opcodes.
LDFLAGS=(--target=wasm32-unknown-emscripten -nostdlib -Wl,--experimental-pic -Wl,-shared -Wl,--no-entry
         -Wl,--allow-undefined -fuse-ld=lld)
export PATH="/usr/lib/llvm-19/bin:$PATH"   # wasm-ld for clang-19

mkdir -p "$OUT"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" -I "$ROOT/py_engine/onnxide/ops/activations.py" --c-enum OX > "$TMP/ox_act_codes.h"
mv "$TMP/ox_act_codes.h" "$OUT/ox_act_codes.h"
build() {  # build NAME EXTRA_FLAGS...
    local name="$1"; shift
    local objs=()
    for src in "${SOURCES[@]}"; do
        local obj="$TMP/$name-${src%.c}.o"
        "$CC" "${CFLAGS[@]}" "$@" -c "$HERE/$src" -o "$obj"
        objs+=("$obj")
    done
    "$CC" "${LDFLAGS[@]}" "${objs[@]}" -o "$OUT/onnxide_kernels_$name.wasm"
    echo "built $OUT/onnxide_kernels_$name.wasm ($(wc -c < "$OUT/onnxide_kernels_$name.wasm") bytes)"
}
build simd128 -msimd128
build relaxed -msimd128 -mrelaxed-simd
