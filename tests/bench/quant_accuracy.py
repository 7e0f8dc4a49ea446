"""Issue 17's accuracy proof: ResNet-18 and MiniLM quantized (dynamic, static QDQ) by onnxide's and onnxruntime's
tools, every file run in both runtimes; writes docs/quantization.md.

usage: nice -n 10 python tests/bench/quant_accuracy.py [--iterations 10] [--threads 1] [--write]

Models: the exported ResNet-18 and MiniLM of tests/models/export.py (seeded random weights, realistic activation
scales). Images: the photographs that scikit-image 0.26 and scikit-learn ship (`pip install scikit-image`), resized
and cropped ImageNet-style; sentences: the Zen of Python (Python's `this` module), hashed to token ids.
Quantized files go to .cache/models/quantized/ (never committed).
"""
import argparse
import codecs
import os
import platform
import re
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "py_engine"), os.path.dirname(HERE)]

import onnxide  # noqa: E402
from onnxide.bench import bench_model  # noqa: E402

OUT = os.path.join(ROOT, ".cache", "models", "quantized")
DOC = os.path.join(ROOT, "docs", "quantization.md")
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
# skimage's photographs (colour, then grey ones given three equal channels); its drawings and charts are left out
SKIMAGE_PHOTOS = ("astronaut.png", "chelsea.png", "coffee.png", "hubble_deep_field.jpg", "ihc.png",
                  "motorcycle_left.png", "retina.jpg", "rocket.jpg", "brick.png", "camera.png", "cell.png",
                  "clock_motion.png", "coins.png", "grass.png", "gravel.png", "moon.png")
CALIBRATION_SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "A quantized model stores its weights as eight-bit integers.",
    "Calibration runs the float model on sample inputs to find activation ranges.",
    "The browser loads the model and runs it in a web worker.",
    "She sells sea shells by the sea shore.",
    "Inference latency matters more than training time for deployed models.",
    "Rain is expected in the north later this afternoon.",
    "The library opens at nine and closes at six on weekdays.",
    "Convolutional networks classify images into a thousand categories.",
    "He bought two apples, a loaf of bread and a bottle of milk.",
    "The committee will publish its report next month.",
    "Numbers without context mean little to a reader.",
)
CLS, SEP, SEQ = 101, 102, 128


# ------------------------------------------------------------------------------------------------ inputs
def _photos():
    """The fixed photographs, as RGB PIL images."""
    try:
        import skimage
    except ImportError:
        sys.exit("quant_accuracy: needs scikit-image's bundled photographs: pip install scikit-image")
    from PIL import Image
    import sklearn.datasets

    folder = os.path.join(os.path.dirname(skimage.__file__), "data")
    skl = os.path.join(os.path.dirname(sklearn.datasets.__file__), "images")
    paths = [os.path.join(folder, f) for f in SKIMAGE_PHOTOS] + [os.path.join(skl, f) for f in ("china.jpg",
                                                                                                "flower.jpg")]
    return [Image.open(p).convert("RGB") for p in paths]


def _view(img, short, where, flip=False):
    """Resize so the short side is `short`, crop 224×224 at `where` ('center', 'tl', 'br'), normalize: 3×224×224."""
    from PIL import Image

    w, h = img.size
    s = short / min(w, h)
    img = img.resize((max(224, round(w * s)), max(224, round(h * s))), Image.BILINEAR)
    w, h = img.size
    x, y = {"center": ((w - 224) // 2, (h - 224) // 2), "tl": (0, 0), "br": (w - 224, h - 224)}[where]
    img = img.crop((x, y, x + 224, y + 224))
    if flip:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    a = np.asarray(img, np.float32).transpose(2, 0, 1) / 255.0
    return (a - MEAN) / STD


def image_sets():
    """(evaluation images N×3×224×224, calibration images 16×3×224×224): different views of the photographs."""
    photos = _photos()
    ev = [_view(p, short, where, flip) for p in photos
          for short, where, flip in ((256, "center", False), (320, "center", False), (256, "center", True),
                                     (256, "tl", False))]
    cal = [_view(p, 288, where, flip) for p in photos[::2] for where, flip in (("br", False), ("center", True))]
    return np.stack(ev).astype(np.float32), np.stack(cal).astype(np.float32)


def _token_ids(sentence, vocab=8192):
    """Words hashed (crc32) into the exported model's id range [1000, vocab) between [CLS] and [SEP]: the model's
    weights are random, so any fixed word-to-id map serves."""
    words = re.findall(r"\w+|[^\w\s]", sentence.lower())
    return [CLS] + [1000 + zlib.crc32(w.encode()) % (vocab - 1000) for w in words][:SEQ - 2] + [SEP]


def sentence_feeds(sentences):
    """MiniLM feeds for sentences: ids padded to SEQ, the attention mask marking the real tokens."""
    ids = np.zeros((len(sentences), SEQ), np.int64)
    mask = np.zeros((len(sentences), SEQ), np.int64)
    for i, s in enumerate(sentences):
        t = _token_ids(s)
        ids[i, :len(t)], mask[i, :len(t)] = t, 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def zen_sentences():
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen; its text is rot13 in this.s
        import this  # noqa: F401
    return [line for line in codecs.decode(sys.modules["this"].s, "rot13").splitlines()[2:] if line.strip()]


def _split(feeds, n):
    """Each row of a batch of feeds as a feeds dict of batch 1."""
    return [{k: v[i:i + 1] for k, v in feeds.items()} for i in range(n)]


# ------------------------------------------------------------------------------------------------ quantizing
def quantize(tool, src, dst, mode, calibration):
    """Quantizes src with `tool` (onnxide.quantization or onnxruntime.quantization): 'dynamic' (defaults: int8
    weights) or 'static QDQ' (MinMax calibration on the calibration feeds, int8 activations and per-channel int8
    weights). Returns seconds taken."""
    t = time.perf_counter()
    if mode == "dynamic":
        tool.quantize_dynamic(src, dst, weight_type=tool.QuantType.QInt8)
    else:
        class Reader(tool.CalibrationDataReader):
            def __init__(self):
                self.it = iter(calibration)

            def get_next(self):
                return next(self.it, None)

        tool.quantize_static(src, dst, Reader(), quant_format=tool.QuantFormat.QDQ, per_channel=True,
                             activation_type=tool.QuantType.QInt8, weight_type=tool.QuantType.QInt8,
                             calibrate_method=tool.CalibrationMethod.MinMax)
    return time.perf_counter() - t


def sessions(path, threads):
    """{runtime name: session or the one-line error it raised}."""
    import onnxruntime as ort

    out = {}
    for name, rt in (("onnxide", onnxide), ("onnxruntime", ort)):
        so = rt.SessionOptions()
        so.intra_op_num_threads = threads
        try:
            out[name] = rt.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        except Exception as e:  # reported in the table
            out[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    return out


def run_all(sess, feeds_list, output):
    return np.concatenate([sess.run([output], f)[0] for f in feeds_list])


def top1_agreement(a, b):
    return float(np.mean(np.argmax(a, 1) == np.argmax(b, 1)))


def cosine(a, b):
    """(mean, min) cosine similarity of matching rows."""
    c = np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(np.mean(c)), float(np.min(c))


def compare_initializers(path_a, path_b):
    """How b's initializers compare with a's of the same name: (bit-equal, all of b's, float ones that differ,
    their largest relative difference, integer ones that differ, their largest difference, ones a lacks)."""
    import onnx
    from onnx import numpy_helper

    a = {t.name: numpy_helper.to_array(t) for t in onnx.load(path_a).graph.initializer}
    same = total = floats = ints = imax = absent = 0
    frel = 0.0
    for t in onnx.load(path_b).graph.initializer:
        total += 1
        y, x = numpy_helper.to_array(t), a.get(t.name)
        if x is None or x.shape != y.shape:
            absent += 1
        elif x.dtype == y.dtype and np.array_equal(x, y):
            same += 1
        elif y.dtype.kind == "f":
            floats += 1
            d = np.abs(x.astype(np.float64) - y) / np.maximum(np.abs(y.astype(np.float64)), 1e-30)
            frel = max(frel, float(d.max()))
        else:
            ints += 1
            imax = max(imax, int(np.max(np.abs(x.astype(np.int64) - y.astype(np.int64)))))
    return same, total, floats, frel, ints, imax, absent


def op_counts(path):
    """The quantization-related node types of a file and how many of each, most frequent first."""
    import collections

    import onnx

    c = collections.Counter(n.op_type for n in onnx.load(path, load_external_data=False).graph.node)
    keep = [(k, v) for k, v in c.most_common() if "quant" in k.lower() or "Integer" in k or k.startswith("QLinear")]
    return ", ".join(f"{k} {v}" for k, v in keep) or "none (float)"


# ------------------------------------------------------------------------------------------------ the run
def model_cases():
    from models import export

    images, cal_images = image_sets()
    zen = zen_sentences()
    return [
        dict(model="ResNet-18", src=export.path_of("resnet18_torchscript"), output="logits", metric="top-1",
             eval=_split({"input": images}, len(images)), cal=_split({"input": cal_images}, len(cal_images)),
             note=f"{len(images)} images ({len(images) // 4} photographs × 4 views), calibration {len(cal_images)} "
                  "other views"),
        dict(model="MiniLM", src=export.path_of("minilm_torchscript"), output="pooled", metric="cosine",
             eval=_split(sentence_feeds(zen), len(zen)),
             cal=_split(sentence_feeds(CALIBRATION_SENTENCES), len(CALIBRATION_SENTENCES)),
             note=f"{len(zen)} sentences (the Zen of Python), calibration {len(CALIBRATION_SENTENCES)} others, "
                  f"seq {SEQ} with padding mask"),
    ]


def evaluate(case, args):
    import onnxruntime.quantization as ort_q
    import onnxide.quantization as ox_q

    os.makedirs(OUT, exist_ok=True)
    base = "resnet18" if case["model"] == "ResNet-18" else "minilm"
    ref = run_all(sessions(case["src"], args.threads)["onnxruntime"], case["eval"], case["output"])
    files = [("float", "—", case["src"])]
    for mode in ("dynamic", "static QDQ"):
        for tool_name, tool in (("onnxide", ox_q), ("onnxruntime", ort_q)):
            dst = os.path.join(OUT, f"{base}_{mode.replace(' ', '_').lower()}_{tool_name}.onnx")
            secs = quantize(tool, case["src"], dst, mode, case["cal"])
            print(f"{case['model']}: {mode} by {tool_name}'s tool in {secs:.1f} s", flush=True)
            files.append((mode, tool_name, dst))
    rows, outputs = [], {}
    for mode, tool_name, path in files:
        sess = sessions(path, args.threads)
        row = dict(model=case["model"], mode=mode, tool=tool_name, mb=os.path.getsize(path) / 1e6, path=path,
                   ops=op_counts(path))
        for rt, s in sess.items():
            if isinstance(s, str):
                row[rt] = s
                continue
            y = run_all(s, case["eval"], case["output"])
            outputs[(mode, tool_name, rt)] = y
            row[rt] = top1_agreement(y, ref) if case["metric"] == "top-1" else cosine(y, ref)
        if all(not isinstance(s, str) for s in sess.values()):
            r = bench_model(path, args.threads, 2, args.iterations, feeds=case["eval"][0])
            row["onnxide_ms"], row["ort_ms"] = r["onnxide_ms"], r["ort_ms"]
        else:
            r = bench_model(path, args.threads, 2, args.iterations, feeds=case["eval"][0], with_ort=False)
            row["onnxide_ms"] = r["onnxide_ms"]
        if tool_name == "onnxruntime":  # the two tools' files of this mode, side by side
            row["same_inits"] = compare_initializers(files[len(rows) - 1][2], path)
            for rt in ("onnxide", "onnxruntime"):
                a, b = outputs.get((mode, "onnxide", rt)), outputs.get((mode, "onnxruntime", rt))
                if a is not None and b is not None:
                    row[f"tools_{rt}"] = top1_agreement(a, b) if case["metric"] == "top-1" else cosine(a, b)
        rows.append(row)
        print({k: v for k, v in row.items() if k != "path"}, flush=True)
    return rows


def _metric(v, metric):
    if v is None:
        return "—"
    if isinstance(v, str):
        return f"fails ({v})"
    if metric == "top-1":
        return f"{v * 100:.1f}%"
    return f"{v[0]:.4f} (min {v[1]:.4f})"


def _ms(v):
    return "—" if v is None else f"{v:.1f}"


def write_doc(cases, all_rows, args, seconds):
    import onnxruntime as ort

    lines = [
        "# Quantized models: onnxide's tool and onnxruntime's, in both runtimes", "",
        "Written by `python tests/bench/quant_accuracy.py --write` (issue 17, item 3); every number below comes from "
        f"that script's last run ({seconds / 60:.0f} min).", "",
        "Each model is quantized by `onnxide.quantization` and by `onnxruntime.quantization` "
        f"{ort.__version__}, with the same arguments: **dynamic** (`quantize_dynamic`, int8 weights, the tool's "
        "default op types) and **static QDQ** (`quantize_static`, QDQ format, MinMax calibration on a fixed set of "
        "inputs, int8 activations, per-channel int8 weights). No `quant_pre_process` step. Every file, the float "
        "model too, runs in onnxide and in onnxruntime (CPUExecutionProvider).", "",
        "- Models: the exported ResNet-18 and MiniLM of `tests/models/export.py`: torchvision's / all-MiniLM-L6's "
        "layouts with seeded random weights (BatchNorm statistics and logit spread made realistic), not trained "
        "checkpoints, so accuracy is measured as agreement with the float model, not against labels.",
        *[f"- {c['model']} inputs: {c['note']}." for c in cases],
        "- ResNet-18 images: the photographs that scikit-image 0.26 ships (8 colour, 8 grey given three equal "
        "channels: astronaut, chelsea, coffee, hubble deep field, ihc, motorcycle, retina, rocket, brick, camera, "
        "cell, clock, coins, grass, gravel, moon) and scikit-learn's two (china, flower); views: short side resized "
        "to 256 or 320 then a 224 center crop, the 256 one mirrored, a 224 top-left crop; calibration views: short "
        "side 288, bottom-right crop and mirrored center crop, of every other photograph. ImageNet mean / std "
        "normalization.",
        "- MiniLM sentences: words hashed (crc32) to token ids in the model's vocabulary between [CLS] and [SEP]; "
        "the metric is the cosine similarity of the mean-pooled embedding (`pooled`) with the float model's.",
        "- vs float: the float model's outputs in onnxruntime are the reference. Tools agree: the onnxide-tool and "
        "onnxruntime-tool files' outputs compared with each other in the same runtime (onnxide / onnxruntime), and "
        "how many of the onnxruntime file's initializers the onnxide file holds under the same name, bit for bit "
        "(activation scales come from calibration runs on different runtimes, so they may differ in the last bits, "
        "and the int32 biases, whose scale is input scale × weight scale, with them).",
        f"- Latency: one input (batch 1), {args.threads} thread(s), median of {args.iterations} runs per runtime, "
        "the two runtimes alternating in blocks of 5 in one process (`onnxide.bench.bench_model`). The rows were "
        "timed minutes apart while the other processes' load changed: compare the two runtimes within a row, not "
        "rows with each other.",
        f"- Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, **shared with other "
        "processes during the run** (latencies are indicative; ratios between runtimes in the same row are the "
        f"more reliable figure); Python {platform.python_version()}, numpy {np.__version__}, onnxide "
        f"{onnxide.__version__}, onnxruntime {ort.__version__}.",
        "- onnxide runs a QDQ file as written (DequantizeLinear → float kernel → QuantizeLinear; its graph optimizer "
        "does not fuse QDQ groups into integer kernels), while onnxruntime fuses them (QLinearConv, QLinearMatMul, "
        "...) and computes in integers: the same QDQ file therefore gives slightly different outputs in the two "
        "runtimes, and is not faster than the float model in onnxide.", "",
    ]
    for case, rows in zip(cases, all_rows):
        metric = case["metric"]
        head = "top-1 = float" if metric == "top-1" else "cosine vs float"
        lines += [f"## {case['model']}", "",
                  f"| quantization | tool | size MB | onnxide ms | onnxruntime ms | {head}, onnxide runtime | "
                  f"{head}, onnxruntime runtime | tools agree, onnxide / onnxruntime runtime | same initializers |",
                  "|---|---|---:|---:|---:|---|---|---|---|"]
        for r in rows:
            agree = "—"
            if "tools_onnxide" in r or "tools_onnxruntime" in r:
                agree = " / ".join(_metric(r.get(f"tools_{rt}"), metric) for rt in ("onnxide", "onnxruntime"))
            same = "—"
            if "same_inits" in r:
                eq, total, floats, frel, ints, imax, absent = r["same_inits"]
                notes = ([f"{floats} float within {frel:.1e} rel."] if floats else []) + \
                    ([f"{ints} integer within {imax}"] if ints else []) + \
                    ([f"{absent} named otherwise"] if absent else [])
                same = f"{eq} / {total}" + (f" ({'; '.join(notes)})" if notes else "")
            lines.append(f"| {r['mode']} | {r['tool']} | {r['mb']:.1f} | {_ms(r.get('onnxide_ms'))} | "
                         f"{_ms(r.get('ort_ms'))} | {_metric(r.get('onnxide'), metric)} | "
                         f"{_metric(r.get('onnxruntime'), metric)} | {agree} | {same} |")
        lines += ["", "Quantized node types in each file:", ""]
        lines += [f"- {r['mode']}, {r['tool']}'s tool: {r['ops']}" for r in rows if r["mode"] != "float"]
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.write:
        with open(DOC, "w") as f:
            f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--write", action="store_true", help="write docs/quantization.md")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    cases = model_cases()
    all_rows = [evaluate(c, args) for c in cases]
    write_doc(cases, all_rows, args, time.perf_counter() - t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
