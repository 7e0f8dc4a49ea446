#!/usr/bin/env bash
# Installs what the WebGPU EP needs natively, idempotently: a Vulkan driver that runs on the CPU (Debian's
# mesa-vulkan-drivers: lavapipe) and wgpu-py (the package's `webgpu` extra). Without them the WebGPU tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
if [ ! -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] && [ ! -e /usr/share/vulkan/icd.d/lvp_icd.aarch64.json ] \
    && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null 2>&1 || {
    apt-get -o DPkg::Lock::Timeout=600 update -qq && \
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null; }
fi
python3 -c "import wgpu" 2>/dev/null || pip_install -e ".[webgpu]"
