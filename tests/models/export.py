"""Exports the test models (torch CNN + transformer encoder, both exporters; the benchmarks' breadth set from
breadth_nets.py; scikit-learn pipelines via skl2onnx) into .cache/models/exported/, once, with the framework's own
outputs saved beside each model as the reference.

    python tests/models/export.py          # export what is missing (needs torch / scikit-learn + skl2onnx)
    python tests/models/export.py --force  # re-export everything

Each model NAME gets NAME.onnx and NAME.npz (arrays `in:<input name>` and `out:<index>` computed by torch or
scikit-learn, never by an ONNX runtime). Weights are random but seeded, and BatchNorm statistics come from a few
training-mode passes so activations have realistic scales.
"""
import argparse
import io
import json
import os
import sys
import warnings

import numpy as np

try:
    from .fetch import CACHE
except ImportError:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from fetch import CACHE

OUT = os.path.join(CACHE, "exported")
EXPORT_VERSION = 2  # bump to invalidate cached exports when this file changes what it writes

# transformer size: MiniLM-L6 shape (6 layers, hidden 384, 12 heads, intermediate 1536), sequence 128
BERT = dict(vocab=8192, hidden=384, layers=6, heads=12, intermediate=1536, max_pos=512, seq=128, batch=2)
CNN_INPUT = (2, 3, 224, 224)

TORCH_MODELS = ("resnet18_dynamo", "resnet18_torchscript", "minilm_dynamo", "minilm_torchscript")
# the breadth set of the benchmarks (issue 16; tests/models/breadth_nets.py), TorchScript exporter only, exported at
# small inputs (the tests' size) with the axes below dynamic so the benchmark can feed its own size
BREADTH_MODELS = ("yolov8n", "crnn", "vit_tiny", "whisper_tiny_encoder", "mobilenetv3_small")
SKLEARN_MODELS = ("rf_zipmap", "rf_nozipmap", "logreg", "pca_svc", "gboost", "gboost_regressor")


def path_of(name):
    return os.path.join(OUT, name + ".onnx")


def _done(name):
    meta = os.path.join(OUT, name + ".json")
    if not (os.path.isfile(path_of(name)) and os.path.isfile(os.path.join(OUT, name + ".npz"))
            and os.path.isfile(meta)):
        return False
    with open(meta) as f:
        return json.load(f).get("export_version") == EXPORT_VERSION


def _save(name, onnx_bytes, inputs, outputs, **meta):
    os.makedirs(OUT, exist_ok=True)
    arrays = {f"in:{k}": np.asarray(v) for k, v in inputs.items()}
    for i, v in enumerate(outputs):
        arrays[f"out:{i}"] = np.asarray(v)
    np.savez(os.path.join(OUT, name + ".npz"), **arrays)
    with open(path_of(name) + ".part", "wb") as f:
        f.write(onnx_bytes)
    os.replace(path_of(name) + ".part", path_of(name))
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(dict(meta, export_version=EXPORT_VERSION), f, indent=1)


def load(name):
    """(model path, inputs dict, framework outputs list, metadata dict) of an exported model."""
    with np.load(os.path.join(OUT, name + ".npz"), allow_pickle=False) as z:
        inputs = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
        outs = [z[f"out:{i}"] for i in range(sum(k.startswith("out:") for k in z.files))]
    with open(os.path.join(OUT, name + ".json")) as f:
        meta = json.load(f)
    return path_of(name), inputs, outs, meta


# ---------------------------------------------------------------------------------------------- torch models
def _torch_modules():
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        """torchvision's resnet18 layout: 7x7 stem, max-pool, 4 stages of 2 basic blocks, global pool, FC."""

        def __init__(self, num_classes=1000):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))

    class SelfAttention(nn.Module):
        def __init__(self, hidden, heads):
            super().__init__()
            self.heads, self.dh = heads, hidden // heads
            self.q, self.k, self.v = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
            self.o = nn.Linear(hidden, hidden)

        def forward(self, x, bias):
            b, s, h = x.shape

            def split(t):
                return t.view(b, s, self.heads, self.dh).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / (self.dh ** 0.5) + bias
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            return self.o(ctx.transpose(1, 2).reshape(b, s, h))

    class EncoderLayer(nn.Module):
        def __init__(self, hidden, heads, inter):
            super().__init__()
            self.attn = SelfAttention(hidden, heads)
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(hidden, inter), nn.Linear(inter, hidden)
            self.act = nn.GELU()
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x, bias):
            x = self.ln1(x + self.attn(x, bias))
            return self.ln2(x + self.ff2(self.act(self.ff1(x))))

    class MiniLM(nn.Module):
        """A BERT-style encoder at all-MiniLM-L6's size; outputs (last hidden state, mean-pooled embedding)."""

        def __init__(self, vocab, hidden, layers, heads, intermediate, max_pos, **_):
            super().__init__()
            self.word = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(max_pos, hidden)
            self.tok_type = nn.Embedding(2, hidden)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(EncoderLayer(hidden, heads, intermediate) for _ in range(layers))

        def forward(self, input_ids, attention_mask, token_type_ids):
            s = input_ids.shape[1]
            pos = torch.arange(s, device=input_ids.device).unsqueeze(0)
            x = self.ln(self.word(input_ids) + self.pos(pos) + self.tok_type(token_type_ids))
            m = attention_mask.to(x.dtype)
            bias = (1.0 - m)[:, None, None, :] * torch.finfo(x.dtype).min
            for layer in self.layers:
                x = layer(x, bias)
            pooled = (x * m[:, :, None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1e-9)
            return x, pooled

    return ResNet18, MiniLM


def _resnet(torch, ResNet18):
    torch.manual_seed(0)
    model = ResNet18()
    for m in model.modules():  # torchvision's initialisation
        if isinstance(m, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    model.train()
    with torch.no_grad():  # realistic BatchNorm running statistics
        for _ in range(3):
            model(torch.randn(4, 3, 112, 112))
    model.eval()
    with torch.no_grad():  # logits spread like a trained classifier's (std about 3)
        std = model(torch.randn(4, 3, 112, 112)).std()
        model.fc.weight.mul_(3.0 / std)
        model.fc.bias.mul_(3.0 / std)
    g = torch.Generator().manual_seed(1)
    x = torch.rand(CNN_INPUT, generator=g)  # an image-like tensor, ImageNet-normalized
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    x = (x - mean) / std
    return model, (x,), ["input"], ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}}


def _minilm(torch, MiniLM):
    torch.manual_seed(0)
    model = MiniLM(**BERT).eval()
    g = torch.Generator().manual_seed(2)
    b, s = BERT["batch"], BERT["seq"]
    ids = torch.randint(1000, BERT["vocab"], (b, s), generator=g)
    ids[:, 0] = 101
    mask = torch.ones(b, s, dtype=torch.int64)
    mask[1, 90:] = 0  # the second sentence is padded
    ids[1, 90:] = 0
    types = torch.zeros(b, s, dtype=torch.int64)
    types[:, 64:] = 1
    return (model, (ids, mask, types), ["input_ids", "attention_mask", "token_type_ids"],
            ["last_hidden_state", "pooled"],
            {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
             "token_type_ids": {0: "batch", 1: "seq"}, "last_hidden_state": {0: "batch", 1: "seq"},
             "pooled": {0: "batch"}})


def export_torch(names, force=False):
    import torch
    ResNet18, MiniLM = _torch_modules()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in names:
        if not force and _done(name):
            continue
        family, exporter = name.rsplit("_", 1)
        model, args, in_names, out_names, dyn = (_resnet(torch, ResNet18) if family == "resnet18"
                                                 else _minilm(torch, MiniLM))
        with torch.no_grad():
            ref = model(*args)
        ref = list(ref) if isinstance(ref, tuple) else [ref]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if exporter == "dynamo":
                batch = torch.export.Dim("batch", min=1, max=64)
                shapes = tuple({0: batch} for _ in in_names)
                if family == "minilm":
                    seq = torch.export.Dim("seq", min=2, max=BERT["max_pos"])
                    shapes = tuple({0: batch, 1: seq} for _ in in_names)
                prog = torch.onnx.export(model, args, input_names=in_names, output_names=out_names,
                                         dynamic_shapes=shapes, dynamo=True, verbose=False)
                prog.optimize()
                data = prog.model_proto.SerializeToString()
                opset = next((o.version for o in prog.model_proto.opset_import if o.domain in ("", "ai.onnx")), None)
            else:
                opset = 17
                buf = io.BytesIO()
                torch.onnx.export(model, args, buf, input_names=in_names, output_names=out_names,
                                  dynamic_axes=dyn, opset_version=opset, dynamo=False)
                data = buf.getvalue()
        _save(name, data, {n: a.numpy() for n, a in zip(in_names, args)}, [r.numpy() for r in ref],
              framework=f"torch {torch.__version__}", exporter=exporter, opset=opset)
        print(f"exported {name} ({len(data) / 1e6:.1f} MB, opset {opset})")


def _breadth(torch, name):
    """(model, example args, input names, output names, dynamic axes) of a breadth model, weights seeded."""
    import breadth_nets as nets
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    if name == "yolov8n":
        model, x, dyn = nets.YOLOv8n(), torch.rand(1, 3, 160, 160, generator=g), {0: "batch", 2: "height", 3: "width"}
        out_dyn = {0: "batch", 2: "anchors"}
    elif name == "crnn":
        model, x, dyn = nets.CRNN(), torch.rand(1, 1, 32, 128, generator=g) * 2 - 1, {0: "batch", 3: "width"}
        out_dyn = {0: "steps", 1: "batch"}
    elif name == "vit_tiny":
        model, x, dyn = nets.ViT(), torch.randn(1, 3, 224, 224, generator=g), {0: "batch"}
        out_dyn = {0: "batch"}
    elif name == "whisper_tiny_encoder":  # log-mel-like values: Whisper's are clamped to [-1.5, 1]-ish
        model, x, dyn = nets.WhisperEncoder(), torch.rand(1, 80, 200, generator=g) * 2.5 - 1.5, {0: "batch", 2: "frames"}
        out_dyn = {0: "batch", 1: "steps"}
    elif name == "mobilenetv3_small":
        model, x, dyn = nets.MobileNetV3Small(), torch.randn(1, 3, 96, 96, generator=g), {0: "batch", 2: "height",
                                                                                        3: "width"}
        out_dyn = {0: "batch"}
    else:
        raise ValueError(name)
    if any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules()):
        model.train()
        with torch.no_grad():  # realistic BatchNorm running statistics
            for _ in range(3):
                model(torch.randn(4, *x.shape[1:], generator=g))
    model.eval()
    if name in ("vit_tiny", "mobilenetv3_small"):
        head = model.head if name == "vit_tiny" else model.classifier[-1]
        with torch.no_grad():  # logits spread like a trained classifier's (std about 3)
            std = model(torch.randn(4, *x.shape[1:], generator=g)).std()
            head.weight.mul_(3.0 / std)
            head.bias.mul_(3.0 / std)
    return model, (x,), ["input"], ["output"], {"input": dyn, "output": out_dyn}


def export_breadth(names, force=False):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in names:
        if not force and _done(name):
            continue
        model, args, in_names, out_names, dyn = _breadth(torch, name)
        with torch.no_grad():
            ref = model(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            buf = io.BytesIO()
            torch.onnx.export(model, args, buf, input_names=in_names, output_names=out_names, dynamic_axes=dyn,
                              opset_version=17, dynamo=False)
        data = buf.getvalue()
        _save(name, data, {n: a.numpy() for n, a in zip(in_names, args)}, [ref.numpy()],
              framework=f"torch {torch.__version__}", exporter="torchscript", opset=17,
              parameters=sum(p.numel() for p in model.parameters()))
        print(f"exported {name} ({len(data) / 1e6:.1f} MB, opset 17)")


# ---------------------------------------------------------------------------------------------- scikit-learn
def _classification_data(n=600, features=12, classes=3, seed=0):
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=n, n_features=features, n_informative=8, n_redundant=2,
                               n_classes=classes, n_clusters_per_class=2, random_state=seed)
    return X.astype(np.float32), y.astype(np.int64)


def export_sklearn(names, force=False):
    import sklearn
    from skl2onnx import to_onnx
    from sklearn.decomposition import PCA
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = _classification_data()
    Xtr, Xte, ytr = X[:400], X[400:], y[:400]
    for name in names:
        if not force and _done(name):
            continue
        options = None
        if name in ("rf_zipmap", "rf_nozipmap"):
            model = RandomForestClassifier(n_estimators=30, max_depth=8, random_state=0).fit(Xtr, ytr)
            if name == "rf_nozipmap":
                options = {id(model): {"zipmap": False}}
        elif name == "logreg":
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(Xtr, ytr)
            options = {id(model.steps[-1][1]): {"zipmap": False}}
        elif name == "pca_svc":
            model = make_pipeline(StandardScaler(), PCA(n_components=6, random_state=0),
                                  SVC(kernel="rbf", C=2.0)).fit(Xtr, ytr)
        elif name == "gboost":
            model = GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=0).fit(Xtr, ytr)
            options = {id(model): {"zipmap": False}}
        elif name == "gboost_regressor":
            target = (Xtr[:, 0] * 2 + np.sin(Xtr[:, 1]) * 3 + Xtr[:, 2] ** 2).astype(np.float64)
            model = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0).fit(Xtr, target)
        else:
            raise ValueError(name)
        onx = to_onnx(model, Xtr[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})
        if name == "gboost_regressor":
            outs = [model.predict(Xte).astype(np.float32).reshape(-1, 1)]
        elif name == "pca_svc":
            outs = [model.predict(Xte), model.decision_function(Xte).astype(np.float32)]
        else:
            outs = [model.predict(Xte), model.predict_proba(Xte).astype(np.float32)]
        _save(name, onx.SerializeToString(), {onx.graph.input[0].name: Xte}, outs,
              framework=f"scikit-learn {sklearn.__version__}", exporter="skl2onnx",
              opset={o.domain or "ai.onnx": o.version for o in onx.opset_import})
        print(f"exported {name}")


def export_all(force=False, only=None):
    """Export every model not yet cached; returns {name: error string} for the families that could not be."""
    errors = {}
    want = set(only) if only else set(TORCH_MODELS + BREADTH_MODELS + SKLEARN_MODELS)
    for names, fn in ((TORCH_MODELS, export_torch), (BREADTH_MODELS, export_breadth),
                      (SKLEARN_MODELS, export_sklearn)):
        sel = [n for n in names if n in want]
        if not sel or (not force and all(_done(n) for n in sel)):
            continue
        try:
            fn(sel, force=force)
        except ImportError as e:
            for n in sel:
                errors[n] = f"cannot export: {e}"
    return errors


def available(name):
    """None when `name` is exported (exporting it now if needed), else why not."""
    if _done(name):
        return None
    return export_all(only=[name]).get(name) or (None if _done(name) else f"{name} was not exported")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    errors = export_all(force=args.force, only=args.names or None)
    for n, e in errors.items():
        print(f"{n}: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
