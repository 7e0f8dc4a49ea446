"""Every real model (the pretrained packages' and the exported ones) on the mock device EP: the same outputs as the
CPU EP, weights placed once, nothing alive after a run but the weights, every readback feeding a host reader.
What each model moves is written to .cache/models/device_transfers.json; tests/device/report.py renders it as
docs/device-transfers.md."""
import json
import os

import numpy as np
import pytest

import onnxide
from device.mock_device import MOCK, Audit, install
from models import export, fetch
from models.common import as_array
from models.test_pretrained import (_det_input, _frames, _line_batch, _oww_audio, _oww_features, model_path)

OUT = os.path.join(fetch.CACHE, "device_transfers.json")


def _vad(name, sr=16000, with_sr=True, state="state"):
    def feeds():
        s0 = np.zeros((2, 1, 128), np.float32)
        for f in _frames(sr)[:48]:
            d = {"input": f[None], state: s0}
            if with_sr:
                d["sr"] = np.array(sr, np.int64)
            yield d
    return ("silero-vad", name), feeds, lambda d, outs: dict(d, **{state: outs[1]})


def _vad_seq():
    def feeds():
        frames, z = _frames(), np.zeros((1, 1, 128), np.float32)
        for i in range(0, 128, 64):
            yield {"input": frames[i: i + 64], "h": z, "c": z}
    return ("silero-vad", "silero_vad_16k_sequence.onnx"), feeds, lambda d, outs: dict(d, h=outs[1], c=outs[2])


def _oww(name):
    def feeds():
        if name == "melspectrogram.onnx":
            yield {"input": _oww_audio()[None, :16000]}
        elif name == "embedding_model.onnx":
            yield {"input_1": _oww_features()[1][:4]}
        elif name == "silero_vad.onnx":
            frames = (_oww_audio() / 32767.0)[: 480 * 24].reshape(-1, 480).astype(np.float32)
            z = np.zeros((2, 1, 64), np.float32)
            for f in frames:
                yield {"input": f[None], "sr": np.array(16000, np.int64), "h": z, "c": z}
        else:
            emb = _oww_features()[2]
            sess = onnxide.InferenceSession(model_path("openwakeword", name), providers=["CPUExecutionProvider"])
            i = sess.get_inputs()[0]
            yield {i.name: emb[: i.shape[1]][None]}
    carry = (lambda d, outs: dict(d, h=outs[1], c=outs[2])) if name == "silero_vad.onnx" else None
    return ("openwakeword", name), feeds, carry


PRETRAINED = {
    "rapidocr/det": (("rapidocr_onnxruntime", "ch_PP-OCRv4_det_infer.onnx"), lambda: [{"x": _det_input()}], None),
    "rapidocr/cls": (("rapidocr_onnxruntime", "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
                     lambda: [{"x": _line_batch(48, 192, 192)}], None),
    "rapidocr/rec": (("rapidocr_onnxruntime", "ch_PP-OCRv4_rec_infer.onnx"), lambda: [{"x": _line_batch(48, 320)}],
                     None),
    "silero-vad/silero_vad@16000": _vad("silero_vad.onnx"),
    "silero-vad/silero_vad@8000": _vad("silero_vad.onnx", 8000),
    "silero-vad/silero_vad_16k_op15": _vad("silero_vad_16k_op15.onnx"),
    "silero-vad/silero_vad_op18_ifless": _vad("silero_vad_op18_ifless.onnx"),
    "silero-vad/silero_vad_half": _vad("silero_vad_half.onnx", with_sr=False),
    "silero-vad/silero_vad_openvino_16k": _vad("silero_vad_openvino_16k.onnx", with_sr=False),
    "silero-vad/silero_vad_16k_sequence": _vad_seq(),
    **{f"openwakeword/{n[:-5]}": _oww(n) for n in ("melspectrogram.onnx", "embedding_model.onnx", "silero_vad.onnx",
                                                    "alexa_v0.1.onnx", "hey_jarvis_v0.1.onnx", "hey_mycroft_v0.1.onnx",
                                                    "hey_rhasspy_v0.1.onnx", "timer_v0.1.onnx", "weather_v0.1.onnx")},
}


def _steps(plan):
    for s in plan.steps:
        yield s
        for b in (s.bodies or {}).values():
            yield from _steps(b)


def _readbacks_feed_host_readers(plan):
    """Every MemcpyToHost copy is read on the host (by a step or as an output), never uploaded again: no value goes
    device -> host -> the same device."""
    back = {s.out_keys[0]: s.in_keys[0] for s in plan.steps if s.node.op_type == "MemcpyToHost"}
    for s in plan.steps:
        if s.node.op_type == "MemcpyFromHost":
            assert s.in_keys[0] not in back, f"{s.in_keys[0]} read back only to be uploaded again"
        for b in (s.bodies or {}).values():
            _readbacks_feed_host_readers(b)
    for dst in back:
        assert any(dst in s.in_keys or dst in s.body_keys for s in plan.steps) or dst in plan.output_keys, \
            f"{dst} read back for nobody"


def _check(key, path, feed_list, carry):
    dev = install()
    cpu = onnxide.InferenceSession(path, providers=["CPUExecutionProvider"])
    sess = onnxide.InferenceSession(path, providers=[MOCK])
    audit = Audit(dev)
    audit.created()
    plan = sess._executor.main_plan
    _readbacks_feed_host_readers(plan)
    steps = [s for s in _steps(plan) if not s.is_transfer]
    ups = downs = runs = 0
    prev = prev_cpu = None
    for feeds in feed_list:
        f_dev, f_cpu = feeds, feeds
        if carry is not None and runs:
            f_dev, f_cpu = carry(feeds, prev), carry(feeds, prev_cpu)
        dev.uploads = dev.downloads = 0
        prev, prev_cpu = sess.run(None, f_dev), cpu.run(None, f_cpu)
        audit.ran()
        ups, downs, runs = max(ups, dev.uploads), max(downs, dev.downloads), runs + 1
        for g, w in zip(prev, prev_cpu):
            np.testing.assert_allclose(as_array(g), as_array(w), rtol=1e-5, atol=1e-6, err_msg=key)
    return {"nodes_on_device": sum(not s.device.is_host for s in steps), "nodes_on_host": sum(s.device.is_host
                                                                                              for s in steps),
            "transfer_steps": sum(s.is_transfer for s in _steps(plan)), "weights_placed": audit.placed,
            "weight_mb": round(dev.constant_bytes / 2 ** 20, 2), "feeds": len(sess.get_inputs()),
            "outputs": len(sess.get_outputs()), "max_uploads_per_run": ups, "max_downloads_per_run": downs,
            "runs": runs, "host_ops": sorted({s.node.op_type for s in steps if s.device.is_host})}


def _record(key, stats):
    found = {}
    if os.path.isfile(OUT):
        with open(OUT) as f:
            found = json.load(f)
    found[key] = stats
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(found, f, indent=1, sort_keys=True)


@pytest.mark.parametrize("key", sorted(PRETRAINED))
def test_pretrained_model_on_the_device(key):
    (pkg, name), feeds, carry = PRETRAINED[key]
    path = model_path(pkg, name)
    _record(key, _check(key, path, list(feeds()), carry))


@pytest.mark.parametrize("name", export.TORCH_MODELS + export.SKLEARN_MODELS)
def test_exported_model_on_the_device(name):
    why = export.available(name)
    if why:
        pytest.skip(why)
    path, feeds, _, _ = export.load(name)
    _record(f"exported/{name}", _check(name, path, [feeds], None))
