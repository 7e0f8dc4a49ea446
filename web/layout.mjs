// layout.mjs — owns where this copy of the modules finds its runtime assets (Pyodide, the onnxide wheel, the WASM
// kernels, manifest.json), relative to the modules: the repository's build/web/. The npm package's copy of this
// file (written by web/pack_npm.py) says './onnxide/', the folder a site deploys beside the modules or its bundle.
export const ASSETS_DIR = '../build/web/';
// what to do when they are not there (in the error that says so)
export const ASSETS_HINT = 'run .ci/setup_web.sh';
