"""The fuzzing campaign's browser sample: fixed-seed mutants (tests/fuzz) run by onnxide in Pyodide with the WASM EP
first (pages/conformance.html's worker), each answered with outputs or an onnxide error — never another Python
exception, a wrapped internal, or a page that stops answering. ONNXIDE_FUZZ_BROWSER_CASES sets the count (300)."""
import base64
import inspect
import os

import casecodec as cc
import onnxide.errors
from fuzz import campaign, corpus
from fuzz.harness import INTERNAL
from onnxide import proto
from test_conformance import BATCH, CASE_TIMEOUT_S, write_batches

CASES = int(os.environ.get("ONNXIDE_FUZZ_BROWSER_CASES", "300"))
SEED = 20261203
CLEAN = {n for n, c in vars(onnxide.errors).items()
         if inspect.isclass(c) and issubclass(c, onnxide.errors.OnnxideError)}


class _Mutant:
    """A mutant in the shape write_batches reads: a name, the model bytes, one data set (feeds in input order)."""

    def __init__(self, name, data, feeds):
        self.name, self.data = name, data
        try:
            g = proto.parse(proto.ModelProto, data).graph
            inits = {t.name for t in g.initializer}
            order = [v.name for v in g.input if v.name not in inits and v.name in feeds]
        except Exception:  # noqa: BLE001 - undecodable: the page refuses it before feeds matter
            order = sorted(feeds)
        self.data_sets = [([feeds[k] for k in order], None)]

    def model_bytes(self):
        return self.data


def _verdict(res):
    if "error" in res:  # the page itself failed (a trap, a timeout)
        return "page", res["error"]
    header, _ = cc.read(base64.b64decode(res["b64"]))
    err = header.get("error")
    if err is None:
        return "ok", ""
    etype = err.split(":", 1)[0]
    if etype not in CLEAN:
        return "raw", err
    return ("internal" if INTERNAL.search(err) else "error"), err


def test_mutants_in_chromium_with_the_wasm_ep(browser, server, scratch):
    from conftest import open_page

    cases = [_Mutant(i, d, f) for i, d, f in campaign.mutated_cases(corpus.seeds(), SEED, 0, CASES)]
    batches = write_batches(cases, str(scratch / "fuzz"))
    page = open_page(browser, f"{server.url}tests/browser/pages/conformance.html?ep=WasmExecutionProvider",
                     "() => window.confReady", timeout_ms=180_000)
    tally, bad = {}, []
    try:
        for bi, (name, n) in enumerate(batches):
            out = page.evaluate("([u, n, t]) => window.runBatch(u, n, t)",
                                [f"/_scratch/fuzz/{name}", n, CASE_TIMEOUT_S * 1000])
            for c, res in zip(cases[bi * BATCH: bi * BATCH + n], out):
                v, why = _verdict(res)
                tally[v] = tally.get(v, 0) + 1
                if v not in ("ok", "error"):
                    bad.append(f"{c.name}: {v}: {why[:200]}")
    finally:
        page.close()
    print(f"\nbrowser fuzz sample ({CASES} mutants, WASM EP in Pyodide):", tally)
    assert sum(tally.values()) == CASES
    assert tally.get("ok", 0) > CASES // 10
    assert not bad, "\n".join(bad[:20])
