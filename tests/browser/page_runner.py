"""Runs ONNX backend cases inside Pyodide (tests/browser/pages/conf-worker.mjs): load a batch blob made by
test_conformance.py, run one case with onnxide's Python API, return its outputs encoded with casecodec."""
import time
import warnings

import numpy as np

import casecodec as cc
import onnxide
from onnxide import dtypes as dt

_batch = {}
PROVIDERS = ["CPUExecutionProvider"]


def set_provider(name):
    """Run cases with `name` first (CPU EP behind it); raises when onnxide lacks that provider here."""
    if name not in onnxide.get_available_providers():
        raise RuntimeError(f"{name} is not available in Pyodide: {onnxide.get_available_providers()}")
    PROVIDERS[:] = [name]
    return name


def _code_of(declared):
    def code_of(dtype, _declared_for_value=None):
        if declared and declared.startswith("tensor("):
            code = dt.CODE_BY_NAME.get(declared[7:-1])
            if code is not None and dt.is_exotic(code):
                return code
        return dt.code_of(dtype)
    return code_of


def load_batch(blob):
    header, payload = cc.read(blob.to_bytes() if hasattr(blob, "to_bytes") else blob)
    _batch.update(header=header, payload=payload)
    return len(header["cases"])


async def run_case(i):
    """Base64 of a blob {name, sets: [[output...]...], ms} or {name, error, ms} (through run_async, as the JS API
    runs: a GPU EP's readbacks are awaited)."""
    case = _batch["header"]["cases"][i]
    payload = _batch["payload"]
    w = cc.Writer()
    t0 = time.perf_counter()
    out = {"name": case["name"]}
    try:
        off, n = case["model"]
        sess = onnxide.InferenceSession(bytes(payload[off:off + n]), providers=list(PROVIDERS))
        names = [x.name for x in sess.get_inputs()]
        declared = [x.type for x in sess.get_outputs()]
        sets = []
        for inputs in case["sets"]:
            ins = [cc.value(x, payload, dt.np_dtype) for x in inputs]
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = await sess.run_async(None, dict(zip(names, ins)))
            sets.append([w.value(g, _code_of(declared[j] if j < len(declared) else None)) for j, g in enumerate(got)])
        out["sets"] = sets
    except Exception as e:  # recorded, like run_backend.py does
        msg = str(e).splitlines()[0] if str(e) else ""
        out["error"] = f"{type(e).__name__}: {msg[:300]}"
    out["ms"] = (time.perf_counter() - t0) * 1e3
    return cc.b64(w.blob(out))
