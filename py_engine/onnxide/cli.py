"""Command line: `onnxide demo | run | info` (python -m onnxide ...)."""
import argparse
import sys

import numpy as np


def _info(path):
    import onnxide

    sess = onnxide.InferenceSession(path)
    meta = sess.get_modelmeta()
    print(f"graph: {meta.graph_name}  producer: {meta.producer_name}  opsets: {sess._model.opsets}")
    for kind, args in (("input", sess.get_inputs()), ("output", sess.get_outputs())):
        for a in args:
            print(f"{kind}: {a.name} {a.type} {a.shape}")
    return 0


def _run(path, seed):
    import onnxide
    from onnxide import dtypes

    sess = onnxide.InferenceSession(path)
    rng = np.random.default_rng(seed)
    feed = {}
    for a in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in (a.shape or [])]
        code = dtypes.CODE_BY_NAME.get(a.type[len("tensor("):-1])
        feed[a.name] = rng.random(shape).astype(dtypes.np_dtype(code)) if code else None
    for a, v in zip(sess.get_outputs(), sess.run(None, feed)):
        print(f"{a.name}: shape {getattr(v, 'shape', None)} dtype {getattr(v, 'dtype', type(v).__name__)}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="onnxide")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="run the bundled default model natively (and compare with onnxruntime)")
    p = sub.add_parser("info", help="print a model's inputs and outputs")
    p.add_argument("model")
    p = sub.add_parser("run", help="run a model once on random inputs")
    p.add_argument("model")
    p.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from .errors import OnnxideError

    try:
        if args.cmd == "demo":
            from .demo import main as demo_main
            return demo_main()
        if args.cmd == "info":
            return _info(args.model)
        return _run(args.model, args.seed)
    except OnnxideError as e:
        print(f"onnxide: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
