"""Command line: `onnxide demo | run | info | optimize | bench | score | quantize` (python -m onnxide ...)."""
import argparse
import sys


def _info(path):
    import onnxide

    sess = onnxide.InferenceSession(path)
    meta = sess.get_modelmeta()
    print(f"graph: {meta.graph_name}  producer: {meta.producer_name}  opsets: {sess._model.opsets}")
    for kind, args in (("input", sess.get_inputs()), ("output", sess.get_outputs())):
        for a in args:
            print(f"{kind}: {a.name} {a.type} {a.shape}")
    return 0


def _optimize(path, output, level):
    import onnxide

    so = onnxide.SessionOptions()
    so.graph_optimization_level = {"disable": 0, "basic": 1, "extended": 2, "all": 99}[level]
    so.optimized_model_filepath = output
    sess = onnxide.InferenceSession(path, so)
    print(f"{path} -> {output}: {len(sess._model.graph.nodes)} nodes after level '{level}'")
    return 0


def _run(path, seed):
    import onnxide
    from onnxide.bench import make_feeds

    sess = onnxide.InferenceSession(path)
    for a, v in zip(sess.get_outputs(), sess.run(None, make_feeds(sess, seed))):
        print(f"{a.name}: shape {getattr(v, 'shape', None)} dtype {getattr(v, 'dtype', type(v).__name__)}")
    return 0


def _bench(args):
    import os

    from .bench import bench_model, format_table
    from .demo import default_model_bytes

    models = [(os.path.basename(m), m) for m in args.models] or [("default-cnn", default_model_bytes())]
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    for threads in args.threads:
        rows = [(name, bench_model(m, threads, args.warmup, args.iterations, dims=dims)) for name, m in models]
        print(format_table(rows, threads))
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
    p = sub.add_parser("optimize", help="write the model after onnxide's graph optimizer (loads in onnxruntime)")
    p.add_argument("model")
    p.add_argument("output")
    p.add_argument("--level", default="all", choices=["disable", "basic", "extended", "all"])
    p = sub.add_parser("bench", help="time onnxide and onnxruntime side by side on model files")
    p.add_argument("models", nargs="*", help="model paths (default: the bundled default model)")
    p.add_argument("--threads", type=int, nargs="+", default=[1])
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dim", action="append", default=[], help="symbolic dim value, e.g. --dim seq=128")
    from .batch.cli import add_parser as add_score

    add_score(sub)
    from .quantization.cli import add_parser as add_quantize

    add_quantize(sub)
    args = ap.parse_args(argv)
    from .errors import OnnxideError

    try:
        if args.cmd == "demo":
            from .demo import main as demo_main
            return demo_main()
        if args.cmd == "bench":
            return _bench(args)
        if args.cmd == "optimize":
            return _optimize(args.model, args.output, args.level)
        if args.cmd == "score":
            from .batch.cli import run as score
            return score(args)
        if args.cmd == "quantize":
            from .quantization.cli import run as quantize
            return quantize(args)
        if args.cmd == "info":
            return _info(args.model)
        return _run(args.model, args.seed)
    except (OnnxideError, ValueError) as e:  # ValueError: make_feeds cannot invent data for an input type
        print(f"onnxide: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
