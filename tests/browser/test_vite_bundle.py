"""Apps built with Vite on the packed onnxide: each app is installed as an app installs it (`npm install` of its
package.json: Vite and the packed tarball as `onnxruntime-web@file:<tgz>`, or the real onnxruntime-web, from the npm
registry through the npm cache in .cache/npm), built for production (`vite build`), deployed as web/README.md says
(dist/ plus onnxide/ beside the bundle, dist/assets/onnxide/) and run in Chromium. A tiny app (`import * as ort from
'onnxruntime-web'`, one session, output written to the page) is checked against numpy and against the same app built
with onnxruntime-web; @ricky0123/vad-web through Vite against itself on onnxruntime-web. Skips when the registry
cannot be reached and the cache lacks a package."""
import json
import os
import re
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ROOT, open_page
from test_npm_clients import packed  # noqa: F401  (the packed tarball installed as onnxruntime-web)

VITE = "8.4.0"
NPM_CACHE = os.path.join(ROOT, ".cache", "npm")
with open(os.path.join(ROOT, "package.json")) as _f:
    DEV = json.load(_f)["devDependencies"]  # onnxruntime-web and @ricky0123/vad-web: the versions the repo tests
NETWORK = re.compile(r"ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|ENETUNREACH|network|offline", re.I)

MAIN_JS = """import * as ort from 'onnxruntime-web';
const out = document.getElementById('out');
try {
  const session = await ort.InferenceSession.create('./model.onnx');
  const x = Float32Array.from({ length: 2 * 5 }, (_, i) => ((i * 7) % 11) / 11 - 0.5);
  const y = (await session.run({ x: new ort.Tensor('float32', x, [2, 5]) }))[session.outputNames[0]];
  window.result = { name: session.outputNames[0], type: y.type, dims: y.dims, data: Array.from(y.data) };
} catch (e) {
  window.result = { error: String(e && e.message || e) };
}
out.textContent = JSON.stringify(window.result);
"""
INDEX_HTML = """<!doctype html><meta charset="utf-8"><title>vite app</title>
<pre id="out">running</pre>
<script type="module" src="./{entry}"></script>
"""


def _weights():
    w = (np.arange(5 * 4, dtype=np.float32).reshape(5, 4) % 7 - 3) / 4
    b = np.array([0.1, -0.2, 0.3, 0.0], np.float32)
    return w, b


def _model(path):
    """softmax(tanh(x @ w + b)) over the last axis: MatMul, Add, Tanh, Softmax (opset 17)."""
    w, b = _weights()
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Tanh", ["a"], ["t"]), helper.make_node("Softmax", ["t"], ["probs"], axis=-1)]
    g = helper.make_graph(nodes, "vite_app", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["n", 4])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def _expected():
    """The app's output computed with numpy in float64 (the app's input rule written out again here)."""
    w, b = _weights()
    x = np.array([((i * 7) % 11) / 11 - 0.5 for i in range(10)], np.float32).reshape(2, 5).astype(np.float64)
    t = np.tanh(x @ w + b)
    e = np.exp(t - t.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _npm_install(folder, deps, overrides=None):
    """`npm install` of a package.json with `deps` in `folder` (through the npm cache in .cache/npm, fetching from
    the registry only what it lacks); skips when the registry is unreachable."""
    pkg = {"name": folder.name, "version": "1.0.0", "private": True, "type": "module", "dependencies": deps}
    if overrides:
        pkg["overrides"] = overrides
    (folder / "package.json").write_text(json.dumps(pkg, indent=1))
    r = subprocess.run(["npm", "install", "--cache", NPM_CACHE, "--prefer-offline", "--no-audit", "--no-fund",
                        "--loglevel=error"], cwd=folder, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if NETWORK.search(r.stderr):
            why = next(line for line in r.stderr.splitlines() if NETWORK.search(line))
            pytest.skip(f"npm registry unreachable (and {NPM_CACHE} lacks a package of {deps}): {why}")
        pytest.fail(f"npm install in {folder} failed: {r.stderr[-2000:]}")


def _vite_build(folder, onnxide, ort_files):
    """`vite build` (production) of `folder` into dist/, deployed as a site deploys it: with onnxide, the package's
    onnxide/ folder beside the bundle (dist/assets/onnxide/); with onnxruntime-web, its ESM build's .wasm Vite emits
    itself, and where `ort_files` (a library importing its CommonJS build), its ort-wasm-* files beside the bundle."""
    r = subprocess.run(["node", os.path.join("node_modules", "vite", "bin", "vite.js"), "build", "--base", "./",
                        "--logLevel", "warn"], cwd=folder, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert not r.stdout.strip() and not r.stderr.strip(), f"vite build warned: {r.stdout}{r.stderr}"
    dist = folder / "dist"
    if onnxide:
        os.symlink(folder / "node_modules" / "onnxruntime-web" / "onnxide", dist / "assets" / "onnxide")
    elif ort_files:
        ort_dist = folder / "node_modules" / "onnxruntime-web" / "dist"
        for f in os.listdir(ort_dist):
            if f.startswith("ort-wasm-") and f.endswith((".wasm", ".mjs")):
                os.symlink(ort_dist / f, dist / "assets" / f)
    return dist


def _apps(scratch, server, tgz, name, files, deps, overrides=None, ort_files=False):
    """{'onnxruntime-web': url, 'onnxide': url}: the app of `files` installed and built twice."""
    urls = {}
    for ort_name, ort_spec in (("onnxruntime-web", DEV["onnxruntime-web"]), ("onnxide", f"file:{tgz}")):
        folder = scratch / "vite" / f"{name}-{ort_name}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for rel, write in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            write(folder / rel)
        _npm_install(folder, {"onnxruntime-web": ort_spec, "vite": VITE, **deps}, overrides)
        _vite_build(folder, ort_name == "onnxide", ort_files)
        urls[ort_name] = f"{server.url}_scratch/vite/{name}-{ort_name}/dist/index.html"
    return urls


def _tgz(packed):  # noqa: F811
    tgz = packed.parent.parent.parent / "onnxide-web-0.1.0.tgz"  # where the packed fixture made it
    assert tgz.is_file(), tgz
    return tgz


@pytest.fixture(scope="module")
def tiny_apps(scratch, server, packed):  # noqa: F811
    files = {"index.html": lambda p: p.write_text(INDEX_HTML.format(entry="main.js")),
             "main.js": lambda p: p.write_text(MAIN_JS), "public/model.onnx": _model}
    return _apps(scratch, server, _tgz(packed), "tiny", files, {})


@pytest.fixture(scope="module")
def vad_apps(scratch, server, packed):  # noqa: F811
    files = {"index.html": lambda p: p.write_text(INDEX_HTML.format(entry="app.mjs")),
             "app.mjs": lambda p: shutil.copyfile(os.path.join(ROOT, "tests", "browser", "clients", "vad_app.mjs"), p),
             "silero_vad_legacy.onnx": lambda p: shutil.copyfile(
                 os.path.join(ROOT, "node_modules", "@ricky0123", "vad-web", "dist", "silero_vad_legacy.onnx"), p)}
    # the library depends on onnxruntime-web ^1.x: the override web/README.md gives points it at the app's one
    return _apps(scratch, server, _tgz(packed), "vad", files, {"@ricky0123/vad-web": DEV["@ricky0123/vad-web"]},
                 {"onnxruntime-web": "$onnxruntime-web"}, ort_files=True)


def _result(browser, url):
    page = open_page(browser, url, "() => window.result")
    try:
        return page.evaluate("() => window.result"), page.logs
    finally:
        page.close()


def test_vite_app_on_onnxide_matches_numpy_and_onnxruntime_web(browser, tiny_apps):
    want = _expected()
    got, logs = _result(browser, tiny_apps["onnxide"])
    ref, logs_ort = _result(browser, tiny_apps["onnxruntime-web"])
    assert "error" not in got, (got, logs)
    assert "error" not in ref, (ref, logs_ort)
    for r in (got, ref):
        assert (r["name"], r["type"], r["dims"]) == ("probs", "float32", [2, 4])
        np.testing.assert_allclose(np.array(r["data"]).reshape(2, 4), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["data"], ref["data"], rtol=1e-5, atol=1e-7)
    print(f"vite app: max |onnxide - numpy| {np.abs(np.array(got['data']).reshape(2, 4) - want).max():.2e}, "
          f"max |onnxide - onnxruntime-web| {np.abs(np.array(got['data']) - np.array(ref['data'])).max():.2e}")


def test_vite_app_without_onnxide_folder_says_what_to_deploy(browser, tiny_apps, scratch):
    """A Vite site that deployed dist/ alone: create() rejects naming the URL it looked at and what to copy there."""
    folder = scratch / "vite" / "tiny-onnxide-bare"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(scratch / "vite" / "tiny-onnxide" / "dist", folder, ignore=shutil.ignore_patterns("onnxide"))
    url = tiny_apps["onnxide"].replace("tiny-onnxide/dist/", "tiny-onnxide-bare/")
    got, logs = _result(browser, url)
    assert got["error"].startswith(f"onnxide web assets not found at {url[:-len('index.html')]}assets/onnxide/ "
                                   "(copy the package's onnxide/ folder there: a bundled site deploys it beside its "
                                   "bundle): "), (got, logs)
    assert "404" in got["error"], got


def test_vite_vad_web_on_onnxide_matches_onnxruntime_web(browser, vad_apps):
    call = """async () => {
      const { synthSpeech, SAMPLE_RATE } = await import('/web/demo/synth.mjs');
      return window.runVad(Array.from(synthSpeech(6)), SAMPLE_RATE);
    }"""
    out = {}
    for name, url in vad_apps.items():
        page = open_page(browser, url, "() => window.appReady")
        try:
            out[name] = page.evaluate(call)
        finally:
            page.close()
    want, got = out["onnxruntime-web"], out["onnxide"]
    assert want, "onnxruntime-web found no speech in the clip"
    assert [(s["start"], s["end"], s["samples"]) for s in got] == [(s["start"], s["end"], s["samples"]) for s in want]
    for g, w in zip(got, want):
        assert abs(g["sum"] - w["sum"]) <= 1e-3 * max(1.0, w["sum"])
