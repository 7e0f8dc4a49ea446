// pyodide_snapshot.mjs — a memory snapshot of Pyodide's interpreter after start-up, for the web host's fast boot
// (web/host.mjs restores it with loadPyodide's _loadSnapshot instead of initialising Python: web/bench/cold_start.py
// times the boot either way). The pure-Python standard-library modules `import numpy, onnxide` pulls in are
// imported first, so that their import is in the snapshot too. Packages with compiled extensions (numpy) cannot be:
// their wasm modules live outside the heap, and the host installs them after the restore. The snapshot holds the
// build id of pyodide.asm.wasm, so it is only ever restored by the Pyodide that made it.
// usage: node .ci/pyodide_snapshot.mjs <pyodide folder> <site-packages tar.gz> <out.bin.gz>
//        (.ci/setup_web.sh runs it; the snapshot is gzipped: mostly zeros, 21 MB -> ~6 MB)
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const [pyodideDir, siteTar, out] = process.argv.slice(2).map((p) => resolve(p));
if (!pyodideDir || !siteTar || !out) {
  console.error('usage: node .ci/pyodide_snapshot.mjs <pyodide folder> <site-packages tar.gz> <out.bin.gz>');
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const SKIP = /^(js|pyodide|_pyodide|pyodide_js|asyncio|micropip|numpy|onnxide|site|sitecustomize|__main__)(\.|$)/;

// 1. which standard-library modules `import numpy, onnxide` imports (in a throwaway interpreter)
const probe = await loadPyodide({ indexURL: `${pyodideDir}/` });
probe.FS.writeFile('/tmp/site.tar.gz', readFileSync(siteTar));
const stdlib = probe.runPython(`
import sys, tarfile, site
before = set(sys.modules)
tarfile.open("/tmp/site.tar.gz").extractall(site.getsitepackages()[0], filter="data")
import numpy, onnxide
sorted(name for name, mod in list(sys.modules.items())
       if name not in before and "site-packages" not in (getattr(mod, "__file__", None) or ""))
`).toJs().filter((n) => !SKIP.test(n));

// 2. a fresh interpreter with those imported, snapshotted (bare if a module touched JavaScript state the snapshot
//    cannot hold)
async function snapshot(modules) {
  const py = await loadPyodide({ indexURL: `${pyodideDir}/`, _makeSnapshot: true });
  for (const m of modules) {
    try {
      py.runPython(`import ${m}`);
    } catch { /* (a module that needs what only the page has: imported there) */ }
  }
  return py.makeMemorySnapshot();
}
let snap;
let imported = stdlib;
try {
  snap = await snapshot(stdlib);
} catch (e) {
  console.log(`[pyodide_snapshot] with ${stdlib.length} modules imported: ${e.message.split('\n')[0]}; bare`);
  imported = [];
  snap = await snapshot([]);
}
const packed = gzipSync(snap);
writeFileSync(out, packed);
console.log(`[pyodide_snapshot] ${out.split('/').pop()}: ${(snap.length / 1e6).toFixed(1)} MB ` +
  `(${(packed.length / 1e6).toFixed(1)} MB gzipped), ${imported.length} standard-library modules imported`);
