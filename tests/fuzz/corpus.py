"""The seed corpus: the ONNX backend cases' models with their first data set's inputs, plus the models of models.py —
cached under .cache/fuzz (building onnx's node cases takes ~15 s)."""
import os
import pickle

import numpy as np

from . import models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, ".cache", "fuzz")
MAX_BYTES = 1 << 20  # seeds with a larger model or feed are left out (cases stay fast)


class Seed:
    __slots__ = ("name", "model", "feeds")

    def __init__(self, name, model, feeds):
        self.name, self.model, self.feeds = name, model, feeds


def _nbytes(v):
    if isinstance(v, np.ndarray):
        return v.nbytes if v.dtype != object else v.size * 16
    if isinstance(v, (list, tuple)):
        return sum(_nbytes(x) for x in v)
    if isinstance(v, dict):
        return 64 * len(v)
    return 0


def _backend_seeds():
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from conformance.cases import load_cases

    out = []
    for c in load_cases():
        model = c.model_bytes()
        inits = {t.name for t in c.model.graph.initializer}
        names = [i.name for i in c.model.graph.input if i.name not in inits]
        feeds = dict(zip(names, c.data_sets[0][0])) if c.data_sets else {}
        if len(model) <= MAX_BYTES and _nbytes(list(feeds.values())) <= MAX_BYTES:
            out.append(Seed(c.name, model, feeds))
    return out


def seeds():
    """Every seed, in a fixed order (built models first): [Seed]."""
    import onnx

    path = os.path.join(CACHE, f"seeds-onnx{onnx.__version__}.pkl")
    if os.path.isfile(path):
        with open(path, "rb") as f:
            backend = pickle.load(f)
    else:
        backend = _backend_seeds()
        os.makedirs(CACHE, exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            pickle.dump(backend, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(path + ".tmp", path)
    built = [Seed(name, *make()) for name, make in models.BUILT.items()]
    return built + backend
