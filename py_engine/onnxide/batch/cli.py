"""`onnxide score MODEL INPUT OUTPUT [--ray-address ...]`: batch scoring on Ray Data, written as Parquet."""


def add_parser(sub):
    p = sub.add_parser("score", help="score a dataset (Parquet / image folder / .npy files) on Ray, write Parquet")
    p.add_argument("model")
    p.add_argument("input", help="a Parquet file or folder, an image folder, or .npy files")
    p.add_argument("output", help="folder the Parquet output is written to")
    p.add_argument("--ray-address", default=None, help="cluster to join ('auto', or HOST:PORT); default: start one here")
    p.add_argument("--input-column", action="append", default=[], metavar="INPUT=COLUMN",
                   help="feed model input INPUT from column COLUMN (default: the column of the input's name)")
    p.add_argument("--format", choices=["parquet", "images", "numpy"], default=None, help="default: from the files")
    p.add_argument("--image-size", default=None, metavar="HxW", help="resize images on read, e.g. 224x224")
    p.add_argument("--actors", type=int, default=None, help="default: the cluster's CPUs / --threads")
    p.add_argument("--threads", type=int, default=None, help="intra-op threads per actor (default 1)")
    p.add_argument("--num-gpus", type=float, default=0, help="GPUs per actor (CUDA or WebGPU EP where present)")
    p.add_argument("--batch-size", default="auto", help="rows per batch (default: from the model's memory)")
    p.add_argument("--on-error", choices=["raise", "column"], default="raise",
                   help="a bad row fails the job (raise) or is written with an 'error' column (column)")
    return p


def run(args):
    import sys

    import onnxide.batch as batch

    try:
        import ray  # noqa: F401
    except ImportError:
        print("onnxide score needs Ray Data: pip install 'onnxide[ray]'", file=sys.stderr)
        return 1
    inputs = dict(pair.split("=", 1) for pair in args.input_column)
    size = tuple(int(v) for v in args.image_size.lower().split("x")) if args.image_size else None
    bs = args.batch_size if args.batch_size == "auto" else int(args.batch_size)
    out = batch.score(args.input, args.model, args.output, inputs=inputs, actors=args.actors, threads=args.threads,
                      num_gpus=args.num_gpus, batch_size=bs, on_error=args.on_error, input_format=args.format,
                      image_size=size, ray_address=args.ray_address)
    print(f"onnxide score: {args.input} -> {out}")
    return 0
