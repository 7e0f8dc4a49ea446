"""Realistic, deterministic test inputs for the pretrained models: a rendered text image and speech-like audio."""
import numpy as np

SR = 16000

# (F1, F2, F3) formant frequencies in Hz of five vowels (Peterson & Barney style averages)
_VOWELS = {
    "a": (730, 1090, 2440), "e": (530, 1840, 2480), "i": (270, 2290, 3010),
    "o": (570, 840, 2410), "u": (300, 870, 2240),
}
_BANDWIDTHS = (90.0, 110.0, 170.0)

TEXT_LINES = ("Hello World 2024", "ONNX inference in numpy", "The quick brown fox")


def text_image(lines=TEXT_LINES, size=34, pad=24):
    """An RGB uint8 image (H, W, 3) of black text lines on white, rendered with Pillow's bundled font.

    Returns None when Pillow (with FreeType) is not installed."""
    try:
        from PIL import Image, ImageDraw, ImageFont
        font = ImageFont.load_default(size=size)
    except (ImportError, TypeError, OSError):
        return None
    probe = ImageDraw.Draw(Image.new("RGB", (8, 8)))
    boxes = [probe.textbbox((0, 0), line, font=font) for line in lines]
    line_h = max(b[3] - b[1] for b in boxes) + size // 2
    width = max(b[2] - b[0] for b in boxes) + 2 * pad
    height = line_h * len(lines) + 2 * pad
    img = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((pad, pad + i * line_h), line, fill=(0, 0, 0), font=font)
    return np.asarray(img, dtype=np.uint8).copy()


def _syllable(rng, vowel, dur, f0_start, f0_end):
    n = int(dur * SR)
    t = np.arange(n) / SR
    f0 = np.linspace(f0_start, f0_end, n) * (1 + 0.01 * np.sin(2 * np.pi * 5.5 * t))  # intonation + vibrato
    phase = 2 * np.pi * np.cumsum(f0) / SR
    k = np.arange(1, int(5000 / max(f0_start, f0_end)) + 1)
    harm_f = k * (f0_start + f0_end) / 2
    # harmonic amplitudes: source tilt (-12 dB/octave) times the three formant resonances
    env = np.ones_like(harm_f)
    for fc, bw in zip(_VOWELS[vowel], _BANDWIDTHS):
        env *= fc ** 2 / np.sqrt((fc ** 2 - harm_f ** 2) ** 2 + (bw * harm_f) ** 2)
    amps = env / k ** 1.0
    voiced = (amps[:, None] * np.sin(k[:, None] * phase[None, :] + rng.uniform(0, 2 * np.pi, (len(k), 1)))).sum(0)
    voiced /= np.max(np.abs(voiced)) + 1e-9
    attack = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.03)  # 30 ms ramps
    return voiced * attack * np.hanning(n) ** 0.25


def _fricative(rng, dur):
    n = int(dur * SR)
    noise = rng.standard_normal(n)
    hp = np.diff(noise, prepend=0.0)  # crude high-pass: "s"/"f"-like hiss
    return 0.25 * hp / (np.max(np.abs(hp)) + 1e-9) * np.hanning(n)


def speech_like(seconds=6.0, seed=0, layout=((0.6, 0), (1.6, 1), (0.9, 0), (1.8, 1), (1.1, 0))):
    """Float32 mono audio in [-1, 1] at 16 kHz: silence (faint noise) and runs of voiced syllables with formants,
    pitch contours and fricatives between them. `layout` is ((seconds, is_speech), ...); returns (audio, spans)
    with spans the (start_s, end_s) of the speech runs."""
    rng = np.random.default_rng(seed)
    parts, spans, pos = [], [], 0.0
    for dur, speech in layout:
        if not speech:
            parts.append(np.zeros(int(dur * SR)))
        else:
            run, got = [], 0.0
            while got < dur - 0.05:
                syl = min(rng.uniform(0.14, 0.26), dur - got)
                f0 = rng.uniform(105, 150)
                run.append(_syllable(rng, rng.choice(list(_VOWELS)), syl, f0 * 1.1, f0 * 0.9))
                got += syl
                if got < dur - 0.12 and rng.random() < 0.5:
                    fr = rng.uniform(0.04, 0.08)
                    run.append(_fricative(rng, fr))
                    got += fr
            seg = np.concatenate(run)
            seg = seg[: int(dur * SR)]
            parts.append(np.pad(seg, (0, int(dur * SR) - len(seg))) * 0.6)
            spans.append((pos, pos + dur))
        pos += dur
    audio = np.concatenate(parts)
    audio = audio + 0.003 * rng.standard_normal(len(audio))  # faint room noise
    total = int(seconds * SR)
    audio = np.pad(audio, (0, max(0, total - len(audio))))[:max(total, len(audio))]
    return np.clip(audio, -1, 1).astype(np.float32), spans


def to_int16_range(audio):
    """openWakeWord's models take 16-bit PCM sample values as float32."""
    return np.round(np.asarray(audio, np.float64) * 32767).clip(-32768, 32767).astype(np.int16)


def spoken(text, voice="en-us", speed=150):
    """`text` spoken by espeak-ng as float32 audio at 16 kHz, or None when espeak-ng is not installed."""
    import io
    import shutil
    import subprocess
    import wave
    exe = shutil.which("espeak-ng")
    if exe is None:
        return None
    r = subprocess.run([exe, "-v", voice, "-s", str(speed), "--stdout", text], capture_output=True, timeout=60)
    if r.returncode != 0 or not r.stdout:
        return None
    with wave.open(io.BytesIO(r.stdout)) as w:
        rate, n = w.getframerate(), w.getnframes()
        pcm = np.frombuffer(w.readframes(n), dtype=np.int16).astype(np.float64) / 32768.0
    if rate != SR:  # band-limited resampling in the frequency domain
        m = int(round(len(pcm) * SR / rate))
        spec = np.fft.rfft(pcm)
        keep = min(len(spec), m // 2 + 1)
        out = np.zeros(m // 2 + 1, dtype=complex)
        out[:keep] = spec[:keep]
        pcm = np.fft.irfft(out, m) * (m / len(pcm))
    return np.clip(pcm, -1, 1).astype(np.float32)


WAKE_PHRASES = ("hey jarvis", "alexa", "hey mycroft", "hey rhasspy", "what is the weather today",
                "set a timer for five minutes")


def wake_word_audio():
    """(float32 16 kHz audio, source): openWakeWord's phrases spoken by espeak-ng between half-second pauses, or
    the synthetic speech-like signal when espeak-ng is not installed."""
    pause = np.zeros(SR // 2, np.float32)
    parts = [pause]
    for phrase in WAKE_PHRASES:
        said = spoken(phrase)
        if said is None:
            audio, _ = speech_like(4.0, seed=3, layout=((0.5, 0), (2.5, 1), (1.0, 0)))
            return audio, "synthetic"
        parts += [said, pause]
    return np.concatenate(parts), "espeak-ng"
