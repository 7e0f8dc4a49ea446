#!/usr/bin/env bash
# Set-up's build of the native CPU kernels (build.py: one library per x86-64 level — baseline, AVX2 + FMA, AVX-512 —
# chosen at load time by what the CPU runs; the same build a wheel makes) into build/native/ (or $ONNXIDE_NATIVE_DIR),
# warnings as errors; nothing is redone when sources, flags and compiler are unchanged. Installs gcc from apt when it
# is missing. With --debug: build/native-debug/ (or $ONNXIDE_NATIVE_DEBUG_DIR) instead, one -march=native library at
# -O1 with each kernel's argument checks (NX_CHECK, -DNX_DEBUG) and AddressSanitizer — what tests/fuzz runs the
# native EP with (python under LD_PRELOAD=libasan, see tests/fuzz/harness.py).
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
CC="${CC:-gcc}"
PYTHON="${PYTHON:-python3}"
if ! command -v "$CC" >/dev/null 2>&1; then
    if [ "$NO_INSTALL" = 1 ]; then echo "build.sh: $CC not found" >&2; exit 1; fi
    SUDO=""; [ "$(id -u)" != "0" ] && SUDO="sudo"
    $SUDO apt-get install -y -q gcc >/dev/null || { $SUDO apt-get update -q >/dev/null && \
        $SUDO apt-get install -y -q gcc >/dev/null; }
fi
export CC
if [ "$DEBUG" = 1 ]; then
    exec "$PYTHON" "$HERE/build.py" --debug --werror --out "${ONNXIDE_NATIVE_DEBUG_DIR:-$ROOT/build/native-debug}"
fi
exec "$PYTHON" "$HERE/build.py" --werror --out "${ONNXIDE_NATIVE_DIR:-$ROOT/build/native}"
