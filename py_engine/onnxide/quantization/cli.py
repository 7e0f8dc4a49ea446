"""`onnxide quantize MODEL OUTPUT`: dynamic or calibrated static quantization from the command line, with progress."""
import os
import sys
import time

import numpy as np

CALIBRATION_KEY = "onnxide.quantize.calibration"  # metadata_props entry naming what the ranges were calibrated on
_TYPE_ALIASES = {"int8": "QInt8", "s8": "QInt8", "uint8": "QUInt8", "u8": "QUInt8", "int16": "QInt16",
                 "s16": "QInt16", "uint16": "QUInt16", "u16": "QUInt16", "int4": "QInt4", "s4": "QInt4",
                 "uint4": "QUInt4", "u4": "QUInt4"}


def add_parser(sub):
    p = sub.add_parser("quantize", help="quantize a model: dynamic, or static calibrated on .npy samples")
    p.add_argument("model")
    p.add_argument("output")
    p.add_argument("--mode", choices=["dynamic", "static"], default="dynamic")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--calibration-data", metavar="DIR",
                     help="static: a folder of .npy samples (one file per sample for a one-input model, or one "
                          "subfolder per sample holding INPUT_NAME.npy for each input)")
    src.add_argument("--random-calibration", type=int, metavar="N",
                     help="static: calibrate on N random inputs (ranges then do not reflect real data; the output "
                          f"model records it in metadata '{CALIBRATION_KEY}')")
    p.add_argument("--format", choices=["QDQ", "QOperator"], default="QDQ", help="static: output format")
    p.add_argument("--weight-type", default="int8", help="int8, uint8, int16, uint16, int4, uint4 (or QInt8 ...)")
    p.add_argument("--activation-type", default=None, help="static: as --weight-type (default int8)")
    p.add_argument("--per-channel", action="store_true")
    p.add_argument("--reduce-range", action="store_true", help="7-bit weights")
    p.add_argument("--calibrate-method", choices=["MinMax", "Entropy", "Percentile", "Distribution"],
                   default="MinMax")
    p.add_argument("--op-types", default=None, help="comma-separated op types to quantize (default: the tool's)")
    p.add_argument("--exclude-nodes", default=None, help="comma-separated node names to leave in float")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="random calibration: value of a symbolic input dim (default 1)")
    p.add_argument("--external-data", action="store_true", help="save the weights in OUTPUT.data")
    return p


def _qtype(name, flag):
    from ..errors import InvalidArgument
    from .quant_utils import QuantType

    try:
        return QuantType.from_string(_TYPE_ALIASES.get(name.lower(), name))
    except ValueError:
        raise InvalidArgument(f"{flag} '{name}' is not a quantized type (one of {', '.join(_TYPE_ALIASES)})") \
            from None


class _ProgressReader:
    """A CalibrationDataReader over `count` samples from `load(k)` that prints samples done / total and the rate to
    `stream`, at most every `every_s` seconds and once at the end."""

    def __init__(self, load, count, stream=None, every_s=1.0):
        self.load, self.count, self.stream, self.every_s = load, count, stream or sys.stderr, every_s
        self.done, self.start, self.last = 0, None, 0.0

    def _report(self, final=False):
        now = time.perf_counter()
        if final or now - self.last >= self.every_s:
            self.last = now
            secs = now - self.start
            rate = self.done / secs if secs > 0 else 0.0
            print(f"calibration: {self.done}/{self.count} samples, {rate:.1f} samples/s, {secs:.1f} s",
                  file=self.stream, flush=True)

    def get_next(self):
        if self.start is None:
            self.start = self.last = time.perf_counter()
        elif self.done < self.count:
            self.done += 1  # the calibrator asks for a sample once it has run the previous one
            self._report(final=self.done == self.count)
        if self.done >= self.count:
            return None
        return self.load(self.done)


def _folder_samples(folder, inputs):
    """(count, load(k)) for a calibration folder: .npy files for a one-input model, or subfolders of INPUT.npy."""
    from ..errors import InvalidArgument, NoSuchFile

    if not os.path.isdir(folder):
        raise NoSuchFile(f"--calibration-data '{folder}' is not a folder")
    names = [a.name for a in inputs]
    files = sorted(f for f in os.listdir(folder) if f.endswith(".npy"))
    subs = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    if files and len(names) == 1:
        paths = [{names[0]: os.path.join(folder, f)} for f in files]
    elif subs and not files:
        paths = [{n: os.path.join(folder, d, n + ".npy") for n in names} for d in subs]
        for sample in paths:
            for n, p in sample.items():
                if not os.path.isfile(p):
                    raise InvalidArgument(f"--calibration-data: sample folder '{os.path.dirname(p)}' lacks "
                                          f"'{n}.npy' for model input '{n}'")
    elif files:
        raise InvalidArgument(f"--calibration-data: the model has {len(names)} inputs ({', '.join(names)}): "
                              "give one subfolder per sample holding INPUT_NAME.npy for each")
    else:
        raise InvalidArgument(f"--calibration-data '{folder}' holds no .npy files nor sample subfolders")
    ranks = {a.name: len(a.shape) if a.shape is not None else None for a in inputs}

    def load(k):
        feed = {}
        for n, p in paths[k].items():
            a = np.load(p, allow_pickle=False)
            if ranks[n] is not None and a.ndim == ranks[n] - 1:
                a = a[None]  # a sample saved without its batch axis
            feed[n] = a
        return feed

    return len(paths), load


def _random_samples(sess, count, dims):
    from ..bench import make_feeds

    return count, lambda k: make_feeds(sess, seed=k, dims=dims)


def _record_calibration(path, text):
    from ..proto.onnx_api import onnx

    model = onnx.load(path, load_external_data=False)
    entry = next((p for p in model.metadata_props if p.key == CALIBRATION_KEY), None)
    if entry is None:
        model.metadata_props.append(onnx.StringStringEntryProto(key=CALIBRATION_KEY, value=text))
    else:
        entry.value = text
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def run(args, stream=None):
    """Quantizes args.model into args.output as the flags say; progress and summary go to `stream` (stderr)."""
    import onnxide
    from ..errors import InvalidArgument, NoSuchFile
    from . import CalibrationMethod, QuantFormat, quantize_dynamic, quantize_static

    stream = stream or sys.stderr
    if not os.path.isfile(args.model):
        raise NoSuchFile(f"model '{args.model}' does not exist")
    weight = _qtype(args.weight_type, "--weight-type")
    ops = [o for o in (args.op_types or "").split(",") if o] or None
    exclude = [n for n in (args.exclude_nodes or "").split(",") if n] or None
    t = time.perf_counter()
    if args.mode == "dynamic":
        for flag, given in (("--calibration-data", args.calibration_data), ("--random-calibration",
                            args.random_calibration), ("--activation-type", args.activation_type)):
            if given is not None:
                raise InvalidArgument(f"{flag} applies to --mode static (dynamic quantization computes activation "
                                      "ranges while it runs)")
        quantize_dynamic(args.model, args.output, op_types_to_quantize=ops, per_channel=args.per_channel,
                         reduce_range=args.reduce_range, weight_type=weight, nodes_to_exclude=exclude,
                         use_external_data_format=args.external_data)
        what = f"dynamic, {weight.name} weights"
    else:
        activation = _qtype(args.activation_type or "int8", "--activation-type")
        sess = onnxide.InferenceSession(args.model)
        if args.calibration_data is not None:
            count, load = _folder_samples(args.calibration_data, sess.get_inputs())
            recorded = f"{count} samples from {os.path.abspath(args.calibration_data)}"
        elif args.random_calibration is not None:
            if args.random_calibration < 1:
                raise InvalidArgument("--random-calibration needs at least 1 sample")
            dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
            count, load = _random_samples(sess, args.random_calibration, dims)
            recorded = f"RANDOM inputs ({count} samples): ranges do not reflect real data"
            print(f"onnxide quantize: calibrating on {count} random inputs; the ranges do not reflect real data",
                  file=stream, flush=True)
        else:
            raise InvalidArgument("--mode static needs --calibration-data DIR or --random-calibration N")
        del sess
        reader = _ProgressReader(load, count, stream)
        quantize_static(args.model, args.output, reader, quant_format=QuantFormat.from_string(args.format),
                        op_types_to_quantize=ops, per_channel=args.per_channel, reduce_range=args.reduce_range,
                        activation_type=activation, weight_type=weight, nodes_to_exclude=exclude,
                        use_external_data_format=args.external_data,
                        calibrate_method=CalibrationMethod[args.calibrate_method])
        _record_calibration(args.output, recorded)
        what = (f"static {args.format}, {activation.name} activations, {weight.name} weights, "
                f"{args.calibrate_method} calibration on {recorded}")
    size = os.path.getsize(args.model) / 1e6, os.path.getsize(args.output) / 1e6
    print(f"onnxide quantize: {args.model} ({size[0]:.2f} MB) -> {args.output} ({size[1]:.2f} MB): {what}"
          f"{', per channel' if args.per_channel else ''} in {time.perf_counter() - t:.1f} s", file=stream)
    return 0
