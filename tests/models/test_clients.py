"""Real clients on onnxide: rapidocr_onnxruntime, silero-vad and openwakeword call `onnxruntime.InferenceSession`
themselves; run with onnxide standing in for onnxruntime (tests/models/ort_shim.py) their own pipelines give the
same results as on onnxruntime: recognized text of a rendered image, speech timestamps, wake-word scores.

Each client package is pip-installed by .ci/setup_models.sh (with its dependencies); a test skips with the reason
when its package, or onnxruntime for the reference run, is missing.
"""
import numpy as np
import pytest

from models import inputs
from models.common import ATOL, need
from models.ort_shim import onnxruntime_as

ENGINES = ("onnxruntime", "onnxide")


def _need_client(module):
    need("onnxruntime", "onnxruntime (the reference engine) is not installed")
    with onnxruntime_as("onnxruntime", purge=(module,)):
        need(module, f"{module} is not installed (bash .ci/setup_models.sh installs it)")


def _sessions_used(ort):
    return len(getattr(ort, "sessions", ()))


# ------------------------------------------------------------------------------------------------ rapidocr
def _ocr(engine, img):
    with onnxruntime_as(engine, purge=("rapidocr_onnxruntime",)) as ort:
        from rapidocr_onnxruntime import RapidOCR
        result, _ = RapidOCR()(img)
        return result or [], _sessions_used(ort)


def test_rapidocr_pipeline(record):
    _need_client("rapidocr_onnxruntime")
    img = inputs.text_image()
    if img is None:
        pytest.skip("Pillow with FreeType is not installed (needed to render the test image)")
    want, _ = _ocr("onnxruntime", img)
    got, used = _ocr("onnxide", img)
    assert used == 3  # det, cls and rec sessions all came from onnxide
    want_text = [t for _, t, _ in want]
    got_text = [t for _, t, _ in got]
    assert "ONNX inference in numpy" in want_text  # the reference itself reads the rendered image
    assert got_text == want_text
    box_err = max(float(np.max(np.abs(np.asarray(g, float) - np.asarray(w, float))))
                  for (g, _, _), (w, _, _) in zip(got, want))
    score_err = max(abs(float(g) - float(w)) for (_, _, g), (_, _, w) in zip(got, want))
    assert box_err <= 1.0, f"text boxes differ by {box_err} px"
    assert score_err <= ATOL
    record("client/rapidocr", text=got_text, box_max_px_diff=box_err, score_max_abs_diff=score_err)


# ----------------------------------------------------------------------------------------------- silero-vad
def _silero(engine, audio, spoken=None):
    import torch
    out = {}
    with onnxruntime_as(engine, purge=("silero_vad",)) as ort:
        from silero_vad import get_speech_timestamps, load_silero_vad
        from silero_vad import get_speech_timestamps_sequence, VADIterator
        wav = torch.from_numpy(audio)
        model = load_silero_vad(onnx=True)  # silero_vad.onnx (opset 16, If on the sample rate)
        out["timestamps_16k"] = get_speech_timestamps(wav, model, sampling_rate=16000)
        out["probs_16k"] = model.audio_forward(wav, 16000).numpy()
        out["timestamps_8k"] = get_speech_timestamps(wav[::2].contiguous(), model, sampling_rate=8000)
        if spoken is not None:
            out["timestamps_spoken"] = get_speech_timestamps(torch.from_numpy(spoken), model, sampling_rate=16000)
        op15 = load_silero_vad(onnx=True, opset_version=15)
        out["timestamps_op15"] = get_speech_timestamps(wav, op15, sampling_rate=16000)
        seq = load_silero_vad(sequence=True)
        out["timestamps_sequence"] = get_speech_timestamps_sequence(audio, seq, sampling_rate=16000)
        it = VADIterator(load_silero_vad(onnx=True), sampling_rate=16000)
        events = []
        for i in range(0, len(audio) - 511, 512):
            ev = it(wav[i: i + 512])
            if ev:
                events.append(ev)
        out["iterator_events"] = events
        out["sessions"] = _sessions_used(ort)
    return out


def test_silero_vad_pipeline(record):
    need("torch", "torch is not installed (silero-vad's pipeline needs it)")
    _need_client("silero_vad")
    audio, spans = inputs.speech_like()
    spoken, source = inputs.wake_word_audio()
    spoken = spoken if source == "espeak-ng" else None  # real (synthesized) speech too, when espeak-ng is there
    want = _silero("onnxruntime", audio, spoken)
    got = _silero("onnxide", audio, spoken)
    assert got["sessions"] == 4
    assert len(want["timestamps_16k"]) == len(spans)  # the reference finds both runs of synthetic speech
    if spoken is not None:
        assert len(want["timestamps_spoken"]) >= 3
    for key in ("timestamps_16k", "timestamps_8k", "timestamps_op15", "timestamps_sequence", "iterator_events",
                "timestamps_spoken"):
        assert got.get(key) == want.get(key), key
    prob_err = float(np.max(np.abs(got["probs_16k"] - want["probs_16k"])))
    assert prob_err <= ATOL
    record("client/silero-vad", timestamps_16k=got["timestamps_16k"], timestamps_8k=got["timestamps_8k"],
           timestamps_sequence=got["timestamps_sequence"], timestamps_op15=got["timestamps_op15"],
           iterator_events=got["iterator_events"],
           timestamps_spoken=got.get("timestamps_spoken"),
           prob_max_abs_diff=prob_err)


# --------------------------------------------------------------------------------------------- openwakeword
def _oww(engine, audio):
    with onnxruntime_as(engine, purge=("openwakeword",)) as ort:
        import openwakeword
        from openwakeword.model import Model
        paths = openwakeword.get_pretrained_model_paths("onnx")
        # AudioFeatures fills its feature buffer from np.random at start-up: seed it so both engines see the same
        np.random.seed(1234)
        model = Model(wakeword_models=paths, inference_framework="onnx")
        frames = model.predict_clip(audio)
        features = np.array(model.preprocessor.feature_buffer)
        np.random.seed(1234)
        gated = Model(wakeword_models=paths[:1], inference_framework="onnx", vad_threshold=0.3)
        gated_frames = gated.predict_clip(audio)
        used = _sessions_used(ort)
    names = sorted(frames[0])
    scores = np.array([[f[n] for n in names] for f in frames], np.float64)
    gated_scores = np.array([[f[n] for n in sorted(f)] for f in gated_frames], np.float64)
    return names, scores, features, gated_scores, used


def test_openwakeword_pipeline(record):
    _need_client("openwakeword")
    audio, source = inputs.wake_word_audio()
    pcm = inputs.to_int16_range(audio)
    want_names, want, want_feat, want_gated, _ = _oww("onnxruntime", pcm)
    names, got, feat, gated, used = _oww("onnxide", pcm)
    assert used == 2 + 6 + 2 + 1 + 1  # mel + embedding + 6 wake words, then mel + embedding + alexa + VAD
    assert names == want_names and got.shape == want.shape and got.shape[0] > 50
    if source == "espeak-ng":  # the spoken phrases really trigger the reference's detectors
        assert want[:, names.index("hey_jarvis_v0.1")].max() > 0.5
    score_err = float(np.max(np.abs(got - want)))
    feat_err = float(np.max(np.abs(feat - want_feat)))
    gated_err = float(np.max(np.abs(gated - want_gated)))
    assert score_err <= ATOL and gated_err <= ATOL
    # The embeddings inside the pipeline reach |73| and sit behind a melspectrogram of 16-bit-scale audio whose
    # float32 noise is ~5e-4 dB (onnxruntime and onnxide are both that far from a float64 evaluation), so the
    # intermediate features are held to 1e-3 relative to their scale; the scores (the output) to 1e-3 absolute.
    feat_scale = float(np.abs(want_feat).max())
    assert feat_err <= ATOL * max(1.0, feat_scale), f"embedding features differ by {feat_err} (scale {feat_scale})"
    record("client/openwakeword", audio=source, models=names, frames=int(got.shape[0]),
           score_max_abs_diff=score_err, feature_max_abs_diff=feat_err, feature_scale=feat_scale, vad_gated_score_max_abs_diff=gated_err,
           max_scores={n: round(float(got[:, i].max()), 4) for i, n in enumerate(names)},
           ref_max_scores={n: round(float(want[:, i].max()), 4) for i, n in enumerate(names)})
