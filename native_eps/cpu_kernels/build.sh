#!/usr/bin/env bash
# Builds the native CPU kernels (nx_*.c) into build/native/libonnxide_cpu.so for this machine's CPU (-march=native:
# they are built where they run, at set-up). Installs gcc from apt when it is missing. The NX_ACT_* codes are generated
# first from the activation table (py_engine/onnxide/ops/activations.py, standard library only) into $OUT.
# With --debug: build/native-debug/ instead, at -O1 with each kernel's argument checks (NX_CHECK, -DNX_DEBUG) and
# AddressSanitizer — what tests/fuzz runs the native EP with (python under LD_PRELOAD=libasan, see tests/fuzz/harness.py).
# usage: native_eps/cpu_kernels/build.sh [--no-install] [--debug]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NO_INSTALL=0; DEBUG=0
for arg in "$@"; do
    case "$arg" in
        --no-install) NO_INSTALL=1 ;;
        --debug) DEBUG=1 ;;
        *) echo "build.sh: unknown option $arg" >&2; exit 2 ;;
    esac
done
if [ "$DEBUG" = 1 ]; then
    OUT="${ONNXIDE_NATIVE_DEBUG_DIR:-$ROOT/build/native-debug}"
    OPT="-O1 -g -fno-omit-frame-pointer -DNX_DEBUG -fsanitize=address"
else
    OUT="${ONNXIDE_NATIVE_DIR:-$ROOT/build/native}"
    OPT="-O3"
fi
CC="${CC:-gcc}"
PYTHON="${PYTHON:-python3}"
if ! command -v "$CC" >/dev/null 2>&1; then
    if [ "$NO_INSTALL" = 1 ]; then echo "build.sh: $CC not found" >&2; exit 1; fi
    SUDO=""; [ "$(id -u)" != "0" ] && SUDO="sudo"
    $SUDO apt-get install -y -q gcc libgomp1 >/dev/null || { $SUDO apt-get update -q >/dev/null && \
        $SUDO apt-get install -y -q gcc libgomp1 >/dev/null; }
fi
mkdir -p "$OUT"
"$PYTHON" -I "$ROOT/py_engine/onnxide/ops/activations.py" --c-enum NX > "$OUT/nx_act_codes.h.tmp"
mv "$OUT/nx_act_codes.h.tmp" "$OUT/nx_act_codes.h"
"$CC" $OPT -march=native -fno-math-errno -fno-trapping-math -mprefer-vector-width=512 -fopenmp -fPIC -shared -fvisibility=hidden -std=gnu11 \
    -Wall -Wextra -Werror -I"$OUT" -o "$OUT/libonnxide_cpu.so.tmp" "$HERE"/nx_*.c
mv "$OUT/libonnxide_cpu.so.tmp" "$OUT/libonnxide_cpu.so"
echo "native CPU kernels: $OUT/libonnxide_cpu.so"
