// wheel_bytecode.mjs — CPython bytecode for a wheel's modules, compiled by Pyodide's own interpreter (so the magic
// number and the cache tag are the ones the page uses): every module gets its __pycache__/<name>.cpython-312.pyc
// beside the .py, as a checked-hash pyc (PEP 552: Python compares a hash of the source it finds with the one in the
// pyc, not the source's mtime, which a wheel's unpacking does not keep; a pyc that does not match its source is
// ignored, never used stale). Pyodide runs with dont_write_bytecode, so without these every page load compiles the
// package from source (onnxide's and numpy's own wheels ship .py only).
// usage: node .ci/wheel_bytecode.mjs <pyodide folder> <wheel>                 the pycs go into the wheel (RECORD too)
//        node .ci/wheel_bytecode.mjs <pyodide folder> <wheel> <out.zip>       the pycs alone, at the wheel's paths
//                                                                             (for a wheel whose hash is pinned)
// (run by .ci/setup_web.sh: the onnxide wheel after `pip wheel`, numpy's pycs beside the Pyodide folder)
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pyodideDir, wheel, pycZip] = process.argv.slice(2).map((p) => resolve(p));
if (!pyodideDir || !wheel) {
  console.error('usage: node .ci/wheel_bytecode.mjs <pyodide folder> <wheel> [<out.zip>]');
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const py = await loadPyodide({ indexURL: `${pyodideDir}/` });
py.FS.writeFile('/tmp/in.whl', readFileSync(wheel));
py.globals.set('ALONE', !!pycZip);
const summary = py.runPython(`
import base64, hashlib, importlib.util, io, os, sys, zipfile

def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

tag = sys.implementation.cache_tag
src = zipfile.ZipFile("/tmp/in.whl")
entries = [(i, src.read(i.filename)) for i in src.infolist()]
have = {i.filename for i, _ in entries}
added = []
for info, data in entries:
    name = info.filename
    if not name.endswith(".py"):
        continue
    folder, base = os.path.split(name)
    pyc = f"{folder}/__pycache__/{base[:-3]}.{tag}.pyc" if folder else f"__pycache__/{base[:-3]}.{tag}.pyc"
    if pyc in have:
        continue
    code = compile(data, name, "exec", dont_inherit=True)
    source_hash = importlib.util.source_hash(data)
    added.append((pyc, importlib._bootstrap_external._code_to_hash_pyc(code, source_hash, checked=True)))
record = next(n for n in have if n.endswith(".dist-info/RECORD"))
out = io.BytesIO()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for info, data in ([] if ALONE else entries):
        if info.filename == record:
            lines = data.decode().splitlines()
            lines = [l for l in lines if not l.startswith(record + ",")]
            lines += [f"{n},{digest(d)},{len(d)}" for n, d in added] + [f"{record},,"]
            data = ("\\n".join(lines) + "\\n").encode()
        z.writestr(info, data)
    for n, d in added:
        z.writestr(zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0)), d, zipfile.ZIP_DEFLATED)
open("/tmp/out.whl", "wb").write(out.getvalue())
f"{len(added)} modules compiled ({tag}, checked-hash pycs)"
`);
writeFileSync(pycZip || wheel, py.FS.readFile('/tmp/out.whl'));
console.log(`[wheel_bytecode] ${wheel.split('/').pop()}: ${summary}${pycZip ? ` -> ${pycZip.split('/').pop()}` : ''}`);
