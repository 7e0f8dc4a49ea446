"""The demo page (silero VAD), the cold-start page (onnxide and onnxruntime-web) and an onnxruntime-web app with only
its import changed, in headless Chromium; the micropip (JupyterLite / PyScript) path in plain Pyodide."""
import os
import re
import sys

import numpy as np

import onnxide

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APP = os.path.join(ROOT, "web", "examples", "ort-web-app", "app.mjs")


def test_demo_page_result_and_screenshot(browser, server, tmp_path):
    from main_job import report, run_demo
    shot = str(tmp_path / "demo.png")
    demo = run_demo(browser, server.url, "worker", 180, shot)
    assert demo["state"] == "done", (demo["error"], demo["logs"][-10:])
    r = demo["result"]
    # the synthetic clip holds voice at 1.0-2.6 s and 3.4-5.0 s: two segments found there
    assert len(r["segments"]) == 2
    (a0, a1), (b0, b1) = r["segments"]
    assert abs(a0 - 1.0) < 0.15 and abs(a1 - 2.6) < 0.3 and abs(b0 - 3.4) < 0.15 and abs(b1 - 5.0) < 0.3
    assert r["boot"]["pyodideMs"] > 0 and r["coldStartMs"] > r["boot"]["pyodideMs"] and len(r["runMs"]) == 187
    # the cold-start split: consecutive parts from navigation to the first result, each >= 0, adding up to it
    split = r["coldStart"]
    assert split["totalMs"] == r["coldStartMs"] and len(split["parts"]) == 10
    assert all(p["ms"] >= 0 for p in split["parts"]), split
    assert abs(sum(p["ms"] for p in split["parts"]) - split["totalMs"]) < 1e-6 * split["totalMs"] + 1e-3
    assert split["overlapped"][0]["part"] == "model download" and split["overlapped"][0]["ms"] > 0
    assert report(demo) == 0
    # the screenshot shows the result: decode it and check the plot and text areas are drawn
    assert os.path.getsize(shot) > 20_000
    try:
        from PIL import Image
    except ImportError:
        return
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape[0] > 600 and img.shape[1] >= 1000
    blue = (img[..., 2] > 200) & (img[..., 0] < 80) & (img[..., 1] > 80) & (img[..., 1] < 150)  # probability curve
    green = (abs(img[..., 0] - 214) < 12) & (abs(img[..., 1] - 236) < 12) & (abs(img[..., 2] - 220) < 12)  # segments
    assert blue.sum() > 500 and green.sum() > 10_000, (blue.sum(), green.sum())


def test_demo_in_page_host(browser, server):
    from main_job import run_demo
    demo = run_demo(browser, server.url, "page", 180)
    assert demo["state"] == "done", demo["error"]
    assert demo["result"]["host"] == "page" and len(demo["result"]["segments"]) == 2


def test_ort_web_app_only_import_changed(browser, server):
    from conftest import open_page
    src = open(APP).read()
    imports = re.findall(r"^import .*$", src, re.M)
    assert imports == ["import * as ort from '../../onnxide-web.mjs';"], imports
    # the rest is plain onnxruntime-web API
    assert "onnxide" not in src.replace(imports[0], "").replace("run it on onnxide", "")
    page = open_page(browser, f"{server.url}web/examples/ort-web-app/", "() => window.appResult")
    res = page.evaluate("() => window.appResult")
    status = page.inner_text("#status")
    page.close()
    assert "error" not in res, res
    assert status == "done" and res["dims"] == [1, 10]
    assert abs(sum(res["probs"]) - 1) < 1e-4 and len(res["top"]) == 3


def test_micropip_install_then_import(plain_pyodide):
    """Plain Pyodide: `await micropip.install(<wheel url>)` then `import onnxide` with the native Python API."""
    got = plain_pyodide.evaluate("""async () => {
        await pyodide.loadPackage('micropip');
        const micropip = pyodide.pyimport('micropip');
        await micropip.install(window.wheelURL);
        return pyodide.runPython(`
import json, numpy as np, onnxide as ort
from onnxide.demo import default_model_bytes, default_input
sess = ort.InferenceSession(default_model_bytes(), providers=["CPUExecutionProvider"])
i, o = sess.get_inputs()[0], sess.get_outputs()[0]
probs = sess.run(None, {i.name: default_input()})[0]
json.dumps({"version": ort.__version__, "providers": ort.get_available_providers(),
            "input": [i.name, i.type, i.shape], "output": [o.name, o.type, o.shape], "probs": probs.tolist(),
            "numpy": np.__version__})
`);
    }""")
    import json
    from onnxide.demo import default_input, default_model_bytes
    r = json.loads(got)
    assert r["version"] == onnxide.__version__ and r["numpy"] == "2.0.2"
    assert r["input"] == ["image", "tensor(float)", ["batch", 3, 64, 64]]
    assert r["output"][:2] == ["probs", "tensor(float)"]
    want = onnxide.InferenceSession(default_model_bytes()).run(None, {"image": default_input()})[0]
    np.testing.assert_allclose(np.array(r["probs"], np.float32), want, rtol=1e-5, atol=1e-6)


def test_missing_assets_reject_instead_of_hanging(browser, server):
    """A host that cannot boot (assets 404) rejects create() with the reason; a later call retries cleanly."""
    from conftest import open_page
    page = open_page(browser, f"{server.url}tests/browser/pages/api.html?host=worker", "() => window.ortReady")
    got = page.evaluate("""async () => {
        ort.env.onnxide.assetsURL = '/no/such/assets/';
        const r = {};
        try { await ort.InferenceSession.create(new Uint8Array([1])); r.first = 'resolved'; }
        catch (e) { r.first = e.message; }
        ort.env.onnxide.assetsURL = undefined;
        const s = await ort.InferenceSession.create('../../../build/web/models/default_cnn.onnx');
        r.names = s.inputNames;
        return r;
    }""")
    page.close()
    assert "onnxide web assets not found" in got["first"] and "404" in got["first"], got
    assert got["names"] == ["image"]


def test_cold_start_page_both_engines(browser, server, tmp_path):
    """web/bench/cold.html runs onnxide and onnxruntime-web through the same steps, and the Pyodide floor (the
    host's boot + import numpy) alone; cold_start.py's section replaces itself in a Markdown file and keeps the rest."""
    from conftest import open_page
    sys.path.insert(0, os.path.join(ROOT, "web", "bench"))
    from cold_start import render, write_section
    res = {}
    for engine in ("onnxide", "ort", "pyodide"):
        page = open_page(browser, f"{server.url}web/bench/cold.html?engine={engine}", "() => window.coldStart", 240_000)
        r = page.evaluate("() => window.coldStart")
        page.close()
        assert "error" not in r, r
        if engine == "pyodide":  # the floor runs no model; the host's fast boot is what it times
            assert r["segments"] is None and r["parts"][2]["part"] == "Pyodide boot (snapshot)", r
        else:  # both engines find the clip's two spoken parts
            assert r["engine"] == engine and len(r["segments"]) == 2, r
        assert all(p["ms"] >= 0 for p in r["parts"]) and r["totalMs"] > 0
        assert abs(sum(p["ms"] for p in r["parts"]) - r["totalMs"]) < 1e-6 * r["totalMs"] + 1e-3
        res[engine] = [r]
    assert [p["part"] for p in res["onnxide"][0]["parts"]][2].startswith("Pyodide boot")
    doc = tmp_path / "b.md"
    doc.write_text("# Bench\n\ntable\n\n## Cold start\n\nold numbers\n\n## Notes\n\n- kept\n")
    write_section(str(doc), render(res))
    text = doc.read_text()
    assert text.startswith("# Bench\n\ntable\n\n## Cold start\n") and "old numbers" not in text
    assert text.count("## Cold start") == 1 and text.endswith("## Notes\n\n- kept\n")
    assert "| onnxide (Worker host, WASM EP)" in text and "| onnxruntime-web (wasm, 1 thread, in the page)" in text
    assert "| floor: Pyodide booted as the host boots it" in text and "| n/a |" in text
