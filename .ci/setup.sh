#!/usr/bin/env bash
# Installs what onnxide's main job and tests need on a fresh machine (registries only), idempotently.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e ".[test]"
