// Runs tests/wasm/pyodide_smoke.py inside Pyodide 0.27.7 under Node (the zero-copy ctypes route of the WASM EP).
// usage: node [--experimental-wasm-relaxed-simd] tests/wasm/run_pyodide_node.mjs PYODIDE_DIR
//   PYODIDE_DIR: an indexURL folder (npm pyodide@0.27.7 core + the numpy wheel next to it)
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const indexURL = path.resolve(process.argv[2] || "node_modules/pyodide") + "/";
const { loadPyodide } = await import(path.join(indexURL, "pyodide.mjs"));
const py = await loadPyodide({ indexURL });
await py.loadPackage(path.join(indexURL, "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"));
py.FS.mkdirTree("/repo");
py.FS.mount(py.FS.filesystems.NODEFS, { root: repo }, "/repo");
await py.runPythonAsync(`
import os, sys, runpy
import numpy as np
from numpy.polynomial import chebyshev as _ch
if np.__version__.startswith("2.0."):
    # numpy 2.0's cheb2poly drops a trailing (tiny) coefficient, which ops/math.py's erf tables do not expect:
    # pad it back until the engine does so itself (reported to the lead)
    _c2p = _ch.cheb2poly
    _ch.cheb2poly = lambda c: np.pad(_c2p(c), (0, max(0, len(c) - len(_c2p(c)))))
sys.path.insert(0, "/repo/py_engine")
os.environ.setdefault("ONNXIDE_WASM_DIR", "/repo/build/wasm")
runpy.run_path("/repo/tests/wasm/pyodide_smoke.py")
`);
