"""Lays out the npm package `onnxide-web` from web/ and build/web/ and packs it (`npm pack`): the API modules at the
top (entry points in `exports`: '.', './wasm', './webgpu', './all'), and onnxide/ with every run-time asset (Pyodide,
the onnxide wheel, the WASM kernels, manifest.json) plus runtime/, the host's own modules the Worker loads. Assets are
found relative to the modules, so an app installs it as `onnxruntime-web` and bundles it unchanged; a bundled site
deploys onnxide/ beside its bundle. `python3 web/pack_npm.py [--out DIR] [--no-tgz]` (after bash .ci/setup_web.sh)."""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WEB = os.path.join(ROOT, "web")
BUILD = os.path.join(ROOT, "build", "web")
API = ["api.mjs", "backends.mjs", "env.mjs", "host-client.mjs", "onnxide-backend.mjs", "onnxide-web.mjs",
       "onnxide-web-wasm.mjs", "session.mjs", "tensor.mjs", "tensor-image.mjs", "wire.mjs", "assets.mjs"]
RUNTIME = ["worker.mjs", "host.mjs", "assets.mjs", "site_tar.mjs", "bridge.py"]  # what the Worker (or the page host) imports
LAYOUT = ("// layout.mjs — owns where this copy of the modules finds its run-time assets: {where}\n"
          "export const ASSETS_DIR = '{dir}';\nexport const ASSETS_HINT = {hint};\n")
# a bundled site that forgot to deploy the folder (the bundle's own folder: dist/ for esbuild, dist/assets/ for Vite)
HINT = json.dumps("copy the package's onnxide/ folder there: a bundled site deploys it beside its bundle")


def _copy(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)


def lay_out(out):
    """The package folder at `out` (replaced); returns its package.json as a dict."""
    manifest_path = os.path.join(BUILD, "manifest.json")
    if not os.path.isfile(manifest_path):
        sys.exit("pack_npm: build/web/ is missing: run bash .ci/setup_web.sh first")
    with open(manifest_path) as f:
        manifest = json.load(f)
    with open(os.path.join(ROOT, "package.json")) as f:
        version = json.load(f)["version"]
    shutil.rmtree(out, ignore_errors=True)
    for name in API:
        _copy(os.path.join(WEB, name), os.path.join(out, name))
    with open(os.path.join(out, "layout.mjs"), "w") as f:
        f.write(LAYOUT.format(where="onnxide/ beside the modules (or beside the bundle made from them)",
                              dir="./onnxide/", hint=HINT))
    assets = os.path.join(out, "onnxide")
    for name in RUNTIME:
        _copy(os.path.join(WEB, name), os.path.join(assets, "runtime", name))
    with open(os.path.join(assets, "runtime", "layout.mjs"), "w") as f:
        f.write(LAYOUT.format(where="the onnxide/ folder above runtime/", dir="../", hint=HINT))
    shutil.copytree(os.path.join(BUILD, manifest["indexURL"]), os.path.join(assets, manifest["indexURL"]),
                    ignore=shutil.ignore_patterns("console.html"))
    _copy(os.path.join(BUILD, manifest["wheel"]), os.path.join(assets, manifest["wheel"]))
    for k in manifest.get("wasmKernels", []):
        _copy(os.path.join(BUILD, k), os.path.join(assets, k))
    packed = {k: manifest[k] for k in ("pyodideVersion", "indexURL", "wheel") if k in manifest}
    packed["wasmKernels"] = manifest.get("wasmKernels", [])
    packed["bytecode"] = manifest.get("bytecode", [])  # files under indexURL, copied with it
    for key in ("snapshot", "sitePackages"):  # the host's fast boot (.ci/setup_web.sh 5b)
        if key in manifest:
            _copy(os.path.join(BUILD, manifest[key]), os.path.join(assets, manifest[key]))
            packed[key] = manifest[key]
    packed["runtime"] = "runtime/"
    with open(os.path.join(assets, "manifest.json"), "w") as f:
        json.dump(packed, f, indent=1)
    pkg = {
        "name": "onnxide-web", "version": version,
        "description": "onnxide (an ONNX inference engine in Python + numpy on Pyodide) behind onnxruntime-web's JS API",
        "main": "./onnxide-web.mjs", "module": "./onnxide-web.mjs",
        "exports": {
            ".": "./onnxide-web.mjs", "./wasm": "./onnxide-web-wasm.mjs", "./webgpu": "./onnxide-web.mjs",
            "./all": "./onnxide-web.mjs", "./onnxide/*": "./onnxide/*", "./package.json": "./package.json",
        },
        "files": ["*.mjs", "onnxide/"], "license": "MIT",
    }
    with open(os.path.join(out, "package.json"), "w") as f:
        json.dump(pkg, f, indent=2)
    return pkg


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "npm", "onnxide-web"), help="package folder")
    ap.add_argument("--no-tgz", action="store_true", help="lay out the folder only (no npm pack)")
    args = ap.parse_args()
    pkg = lay_out(args.out)
    if not args.no_tgz:
        subprocess.run(["npm", "pack", "--silent", "--pack-destination", os.path.dirname(args.out)], cwd=args.out,
                       check=True, stdout=subprocess.DEVNULL)
        print(os.path.join(os.path.dirname(args.out), f"{pkg['name']}-{pkg['version']}.tgz"))
    else:
        print(args.out)


if __name__ == "__main__":
    main()
