"""Every .onnx shipped by rapidocr_onnxruntime 1.4.4, silero-vad 6.2.3 and openwakeword 0.5.1 runs in onnxide and
matches onnxruntime within 1e-3 on realistic inputs (rendered text, speech-like audio).

The models come from tests/models/fetch.py (pip download into .cache/models/); a package that cannot be
downloaded skips its tests with the reason.
"""
import os

import numpy as np
import pytest

from models import fetch, inputs
from models.common import ATOL, check_outputs, need, onnxide_session, ort_session

OCR_MODELS = ("ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx")
VAD_MODELS = ("silero_vad.onnx", "silero_vad_16k_op15.onnx", "silero_vad_16k_sequence.onnx", "silero_vad_half.onnx",
              "silero_vad_op18_ifless.onnx", "silero_vad_openvino_16k.onnx")
OWW_MODELS = ("alexa_v0.1.onnx", "embedding_model.onnx", "hey_jarvis_v0.1.onnx", "hey_mycroft_v0.1.onnx",
              "hey_rhasspy_v0.1.onnx", "melspectrogram.onnx", "silero_vad.onnx", "timer_v0.1.onnx",
              "weather_v0.1.onnx")
PACKAGE_MODELS = {"rapidocr_onnxruntime": OCR_MODELS, "silero-vad": VAD_MODELS, "openwakeword": OWW_MODELS}


def model_path(pkg, name):
    paths = fetch.model_paths(pkg)
    if not paths:
        pytest.skip(f"{pkg}=={fetch.PACKAGES[pkg][0]} could not be downloaded (pip download failed)")
    path = os.path.join(fetch.model_dir(pkg), name)
    assert os.path.isfile(path), f"{name} is not in {pkg}"
    return path


@pytest.mark.parametrize("pkg", sorted(PACKAGE_MODELS))
def test_every_shipped_model_is_covered(pkg):
    paths = fetch.model_paths(pkg)
    if not paths:
        pytest.skip(f"{pkg} could not be downloaded")
    assert sorted(os.path.basename(p) for p in paths) == sorted(PACKAGE_MODELS[pkg])


def both(path, feeds_list, record, key, atol=ATOL, carry=None, rtol=0.0):
    """Run each feed dict (or a generator of them) through onnxide and onnxruntime, compare, and record.

    `carry(feeds, outs)` -> next feeds lets streaming models feed each engine its own recurrent state."""
    ref_sess, sess = ort_session(path), onnxide_session(path)
    worst, runs = 0.0, 0
    ref_outs = got_outs = None
    for feeds in feeds_list:
        f_ref, f_got = feeds, feeds
        if carry is not None and runs:
            f_ref, f_got = carry(feeds, ref_outs), carry(feeds, got_outs)
        ref_outs = ref_sess.run(None, f_ref)
        got_outs = sess.run(None, f_got)
        worst = max(worst, check_outputs(got_outs, ref_outs, atol, f"{os.path.basename(path)} run {runs}", rtol))
        runs += 1
    record(key, max_abs_err_vs_ort=worst, atol=atol, rtol=rtol, runs=runs)
    return worst


# ------------------------------------------------------------------------------------------------------ OCR
def _pil():
    return need("PIL.Image", "Pillow is not installed (needed to render the test image)")


def _normalize(img):
    """PaddleOCR's normalisation: HWC uint8 -> CHW float32 in [-1, 1]."""
    return ((img.astype(np.float32) / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)


def _det_input():
    Image = _pil()
    img = inputs.text_image()
    h, w = img.shape[:2]
    scale = 736 / max(h, w)
    nh, nw = max(32, int(round(h * scale / 32)) * 32), max(32, int(round(w * scale / 32)) * 32)
    resized = np.asarray(Image.fromarray(img).resize((nw, nh), Image.BILINEAR))
    return _normalize(resized)[None]


def _line_batch(height, min_width, max_width=None):
    """Each text line rendered alone, resized to `height`, right-padded with zeros (as PaddleOCR pads)."""
    Image = _pil()
    lines = [inputs.text_image([t], pad=6) for t in inputs.TEXT_LINES]
    widths = [int(np.ceil(height * l.shape[1] / l.shape[0])) for l in lines]
    width = max(min_width, max(widths))
    if max_width:
        width = min(width, max_width)
    batch = np.zeros((len(lines), 3, height, width), np.float32)
    for i, (l, w) in enumerate(zip(lines, widths)):
        w = min(w, width)
        batch[i, :, :, :w] = _normalize(np.asarray(Image.fromarray(l).resize((w, height), Image.BILINEAR)))
    return batch


def test_ocr_det(record):
    path = model_path("rapidocr_onnxruntime", "ch_PP-OCRv4_det_infer.onnx")
    x = _det_input()
    both(path, [{"x": x}], record, "rapidocr/ch_PP-OCRv4_det_infer")
    ref = ort_session(path).run(None, {"x": x})[0]
    assert (ref > 0.3).mean() > 0.01  # the rendered text really shows up in the probability map


def test_ocr_cls(record):
    path = model_path("rapidocr_onnxruntime", "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    x = _line_batch(48, 192, 192)
    both(path, [{"x": x}, {"x": x[:, :, ::-1, ::-1].copy()}], record, "rapidocr/ch_ppocr_mobile_v2.0_cls_infer")


def test_ocr_rec(record):
    path = model_path("rapidocr_onnxruntime", "ch_PP-OCRv4_rec_infer.onnx")
    x = _line_batch(48, 320)
    both(path, [{"x": x}], record, "rapidocr/ch_PP-OCRv4_rec_infer")


# ------------------------------------------------------------------------------------------------- silero-vad
def _frames(sr=16000, seconds=6.0):
    audio, _ = inputs.speech_like(seconds)
    if sr == 8000:
        audio = audio[::2].copy()
    frame, ctx = (512, 64) if sr == 16000 else (256, 32)
    n = len(audio) // frame
    padded = np.concatenate([np.zeros(ctx, np.float32), audio[: n * frame]])
    return np.stack([padded[i * frame: i * frame + ctx + frame] for i in range(n)]).astype(np.float32)


def _vad_stream(path, record, key, sr, with_sr=True, state_name="state"):
    frames = _frames(sr)
    state0 = np.zeros((2, 1, 128), np.float32)

    def feeds():
        for f in frames:
            d = {"input": f[None], state_name: state0}
            if with_sr:
                d["sr"] = np.array(sr, np.int64)
            yield d

    def carry(d, outs):
        return dict(d, **{state_name: outs[1]})

    both(path, feeds(), record, key, carry=carry)


@pytest.mark.parametrize("name,sr", [("silero_vad.onnx", 16000), ("silero_vad.onnx", 8000),
                                     ("silero_vad_16k_op15.onnx", 16000), ("silero_vad_op18_ifless.onnx", 16000),
                                     ("silero_vad_op18_ifless.onnx", 8000)])
def test_silero_streaming_with_sr(record, name, sr):
    _vad_stream(model_path("silero-vad", name), record, f"silero-vad/{name[:-5]}@{sr}", sr)


@pytest.mark.parametrize("name", ["silero_vad_half.onnx", "silero_vad_openvino_16k.onnx"])
def test_silero_streaming_16k_only(record, name):
    _vad_stream(model_path("silero-vad", name), record, f"silero-vad/{name[:-5]}@16000", 16000, with_sr=False)


def test_silero_sequence(record):
    path = model_path("silero-vad", "silero_vad_16k_sequence.onnx")
    frames = _frames()
    h = c = np.zeros((1, 1, 128), np.float32)
    blocks = [frames[i: i + 64] for i in range(0, len(frames), 64)]  # 64 frames per call, state carried over

    def carry(d, outs):
        return dict(d, h=outs[1], c=outs[2])

    both(path, ({"input": b, "h": h, "c": c} for b in blocks), record, "silero-vad/silero_vad_16k_sequence",
         carry=carry)


# ---------------------------------------------------------------------------------------------- openwakeword
def _oww_audio():
    """openWakeWord's phrases spoken by espeak-ng (synthetic speech-like audio without it), 16-bit scale."""
    audio, _ = inputs.wake_word_audio()
    return inputs.to_int16_range(audio).astype(np.float32)


def _oww_features():
    """melspectrogram -> embedding -> features, computed with onnxruntime (the shared input of later stages)."""
    mel_path = model_path("openwakeword", "melspectrogram.onnx")
    emb_path = model_path("openwakeword", "embedding_model.onnx")
    mel = ort_session(mel_path).run(None, {"input": _oww_audio()[None]})[0].squeeze() / 10 + 2  # as openWakeWord
    windows = np.stack([mel[i: i + 76] for i in range(0, mel.shape[0] - 76 + 1, 8)])[..., None].astype(np.float32)
    emb = ort_session(emb_path).run(None, {"input_1": windows})[0].squeeze()
    return mel.astype(np.float32), windows, emb.astype(np.float32)


def test_oww_melspectrogram(record):
    path = model_path("openwakeword", "melspectrogram.onnx")
    audio = _oww_audio()
    # whole clip, and openWakeWord's streaming chunk (1280 new samples + 480 of history)
    # Output in dB-like units up to ~100, from 16-bit-scale audio: both engines are ~5e-4 from a float64
    # evaluation of the model, so values are held to 1e-3 + 1e-5 * |value| (float32 noise at that magnitude).
    both(path, [{"input": audio[None]}, {"input": audio[None, 8000: 8000 + 1760]}], record,
         "openwakeword/melspectrogram", rtol=1e-5)


def test_oww_embedding(record):
    path = model_path("openwakeword", "embedding_model.onnx")
    _, windows, _ = _oww_features()
    both(path, [{"input_1": windows}, {"input_1": windows[:1]}], record, "openwakeword/embedding_model")


@pytest.mark.parametrize("name", ["alexa_v0.1.onnx", "hey_jarvis_v0.1.onnx", "hey_mycroft_v0.1.onnx",
                                  "hey_rhasspy_v0.1.onnx", "timer_v0.1.onnx", "weather_v0.1.onnx"])
def test_oww_wakeword(record, name):
    path = model_path("openwakeword", name)
    n = ort_session(path).get_inputs()[0].shape[1]
    _, _, emb = _oww_features()
    feeds = [{ort_session(path).get_inputs()[0].name: emb[i: i + n][None]} for i in range(0, len(emb) - n + 1, 3)]
    assert feeds
    both(path, feeds, record, f"openwakeword/{name[:-5]}")


def test_oww_silero_vad(record):
    path = model_path("openwakeword", "silero_vad.onnx")
    audio = _oww_audio() / 32767.0
    frames = audio[: len(audio) // 480 * 480].reshape(-1, 480).astype(np.float32)
    z = np.zeros((2, 1, 64), np.float32)

    def carry(d, outs):
        return dict(d, h=outs[1], c=outs[2])

    # The LSTM cell state of this (v4) model grows to |c| ~ 110 over speech; onnxruntime itself is 7e-4 from a
    # float64 evaluation there (onnxide 2e-4), so values are held to 1e-3 + 1e-5 * |value|. The speech
    # probability (output 0) stays within 1e-3 absolute.
    both(path, ({"input": f[None], "sr": np.array(16000, np.int64), "h": z, "c": z} for f in frames), record,
         "openwakeword/silero_vad", carry=carry, rtol=1e-5)
