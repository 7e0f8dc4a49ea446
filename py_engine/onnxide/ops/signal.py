"""Signal processing ops: DFT (opsets 17 and 20), STFT, Hann/Hamming/Blackman windows and MelWeightMatrix."""
import numpy as np

from ..dtypes import np_dtype
from ..errors import Fail, InvalidArgument
from ..runtime import limits
from .inference import rule, unknown_dims
from .math import lower, via_float32
from .registry import op


def _scalar_int(v, what):
    a = np.asarray(v)
    if a.size != 1:
        raise InvalidArgument(f"{what} must be a scalar, got shape {a.shape}")
    return int(a.ravel()[0])


def _to_complex(x, what):
    """Complex view of a [..., 1|2] real/complex signal, in single precision for float32/float16 inputs."""
    ft = np.float64 if x.dtype == np.float64 else np.float32
    if x.shape[-1] == 1:
        return x[..., 0].astype(ft)
    if x.shape[-1] == 2:
        z = np.empty(x.shape[:-1], np.complex128 if ft == np.float64 else np.complex64)
        z.real, z.imag = x[..., 0], x[..., 1]
        return z
    raise InvalidArgument(f"{what}: the last dimension must be 1 (real) or 2 (complex), got {x.shape[-1]}")


def _from_complex(z, dtype):
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


def _check_onesided(last, inverse, onesided, where="DFT:"):
    """Fail, as onnx's inference, where a one-sided DFT gets complex input (or an inverse one real input)."""
    if onesided and isinstance(last, int) and last != (2 if inverse else 1):
        raise Fail(f"{where} {'inverse one-sided DFT requires complex' if inverse else 'one-sided DFT requires real'} "
                   f"input (last dimension must be {2 if inverse else 1})")


def _dft(x, dft_length, axis, inverse, onesided):
    if x.ndim < 3:
        raise InvalidArgument(f"DFT: input must have rank >= 3, got {x.ndim}")
    _check_onesided(x.shape[-1], inverse, onesided)
    r = x.ndim
    if axis < 0:
        axis += r
    if axis < 1 or axis > r - 2:
        raise InvalidArgument(f"DFT: axis {axis} out of range for input rank {r}")
    real_in = x.shape[-1] == 1
    z = _to_complex(x, "DFT")
    n_in = z.shape[axis]
    if dft_length is not None:
        n = _scalar_int(dft_length, "DFT: dft_length")
        if n < 1:
            raise InvalidArgument(f"DFT: dft_length must be positive, got {n}")
        limits.check(z.size // max(n_in, 1) * n * 16, "DFT output of {} points", n)
    else:
        n = None
    if inverse and onesided:
        # the input is a half spectrum (n//2+1 bins) of a real signal: the output is real
        n_out = n if n is not None else 2 * (n_in - 1)
        y = np.fft.irfft(z, n=n_out, axis=axis)
        return y[..., None].astype(x.dtype)
    if n is None:
        n = n_in
    if inverse:
        y = np.fft.ifft(z, n=n, axis=axis)
    else:
        y = np.fft.rfft(z.real, n=n, axis=axis) if (real_in and onesided) else np.fft.fft(z, n=n, axis=axis)
        if onesided and not real_in:
            y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return _from_complex(y, x.dtype)


@op("DFT", since=17, host_inputs=(1,))
@via_float32
def dft_17(x, dft_length=None, *, axis=1, inverse=0, onesided=0):
    return _dft(x, dft_length, axis, inverse, onesided)


@op("DFT", since=20, host_inputs=(1, 2))
@via_float32
def dft_20(x, dft_length=None, axis=None, *, inverse=0, onesided=0):
    ax = -2 if axis is None or np.asarray(axis).size == 0 else _scalar_int(axis, "DFT: axis")
    return _dft(x, dft_length, ax, inverse, onesided)


@op("STFT", since=17, host_inputs=(1, 3))
@via_float32
def stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    if signal.ndim != 3:
        raise InvalidArgument(f"STFT: signal must be [batch, length, 1|2], got shape {signal.shape}")
    z = _to_complex(signal, "STFT")
    step = _scalar_int(frame_step, "STFT: frame_step")
    if window is not None and window.size > 0:
        win = window.astype(np.float64).ravel()
        flen = win.size
        if frame_length is not None and _scalar_int(frame_length, "STFT: frame_length") != flen:
            raise InvalidArgument("STFT: frame_length differs from the window length")
    elif frame_length is not None:
        flen = _scalar_int(frame_length, "STFT: frame_length")
        win = np.ones(flen)
    else:
        raise InvalidArgument("STFT: one of window and frame_length is required")
    length = z.shape[1]
    if step < 1 or flen < 1 or flen > length:
        raise InvalidArgument(f"STFT: bad frame_step {step} / frame_length {flen} for signal length {length}")
    n_frames = 1 + (length - flen) // step
    idx = np.arange(n_frames)[:, None] * step + np.arange(flen)[None, :]
    frames = z[:, idx] * win  # (batch, frames, flen)
    real_in = signal.shape[-1] == 1
    if onesided and real_in:
        y = np.fft.rfft(frames.real, axis=-1)
    else:
        y = np.fft.fft(frames, axis=-1)
        if onesided:
            y = y[..., : flen // 2 + 1]
    return _from_complex(y, signal.dtype)


def _window(size, periodic, output_datatype, coeffs, what):
    n = _scalar_int(size, what + ": size")
    if n < 0:
        raise InvalidArgument(f"{what}: size must be non-negative")
    denom = float(n if periodic else n - 1)
    k = np.arange(n, dtype=np.float64)
    w = np.zeros(n)
    with np.errstate(divide="ignore", invalid="ignore"):  # (a symmetric window of size 1 is 0 / 0: NaN, as the spec)
        for i, a in enumerate(coeffs):
            w = w + ((-1) ** i) * a * np.cos(2 * np.pi * i * k / denom)
    return lower(w, np_dtype(output_datatype))


@op("HannWindow", since=17, host_inputs=(0,))
def hann_window(size, *, output_datatype=1, periodic=1):
    return _window(size, periodic, output_datatype, (0.5, 0.5), "HannWindow")


@op("HammingWindow", since=17, host_inputs=(0,))
def hamming_window(size, *, output_datatype=1, periodic=1):
    return _window(size, periodic, output_datatype, (25.0 / 46.0, 21.0 / 46.0), "HammingWindow")


@op("BlackmanWindow", since=17, host_inputs=(0,))
def blackman_window(size, *, output_datatype=1, periodic=1):
    return _window(size, periodic, output_datatype, (0.42, 0.5, 0.08), "BlackmanWindow")


@op("MelWeightMatrix", since=17, host_inputs=(0, 1, 2, 3, 4))
@via_float32(outputs=())
def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *,
                      output_datatype=1):
    n_mel = _scalar_int(num_mel_bins, "MelWeightMatrix: num_mel_bins")
    n_dft = _scalar_int(dft_length, "MelWeightMatrix: dft_length")
    rate = _scalar_int(sample_rate, "MelWeightMatrix: sample_rate")
    lo = float(np.asarray(lower_edge_hertz).ravel()[0])
    hi = float(np.asarray(upper_edge_hertz).ravel()[0])
    if n_mel < 1 or n_dft < 1 or rate < 1 or lo < 0 or hi < lo:
        raise InvalidArgument("MelWeightMatrix: invalid arguments")
    n_spec = n_dft // 2 + 1
    lo_mel = 2595.0 * np.log10(1.0 + lo / 700.0)
    hi_mel = 2595.0 * np.log10(1.0 + hi / 700.0)
    # the ONNX definition divides the mel range into (num_mel_bins + 2) steps
    step = (hi_mel - lo_mel) / (n_mel + 2)
    mel = np.arange(n_mel + 2, dtype=np.float64) * step + lo_mel
    hz = 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    bins = np.floor((n_dft + 1) * hz / rate).astype(np.int64)
    left, center, right = bins[:-2][None, :], bins[1:-1][None, :], bins[2:][None, :]
    j = np.arange(n_spec)[:, None]
    up_den = np.maximum(center - left, 1)
    down_den = np.maximum(right - center, 1)
    up = np.where(center == left, (j == center).astype(np.float64), (j - left) / up_den)
    up = np.where((j >= left) & (j <= center), up, 0.0)
    down = np.where((j >= center) & (j < right), (right - j) / down_den, 0.0)
    out = np.where((j >= center) & (j < right), down, up)
    return lower(out, np_dtype(output_datatype))


@rule("DFT")
def _dft_rule(f):
    """The input's type and rank."""
    d = f.dims(0)
    _check_onesided(d[-1] if d else None, f.attr("inverse", 0), f.attr("onesided", 0),
                    f"Node ({f.node.name}) Op (DFT) [ShapeInferenceError]")
    return [(f.type(0), unknown_dims(f.rank(0)))]


@rule("STFT")
def _stft_rule(f):
    """The signal's type; [batch, frames, bins, 2]."""
    d = f.dims(0)
    return [(f.type(0), [d[0] if d is not None else None, None, None, 2])]


@rule("HannWindow", "HammingWindow", "BlackmanWindow")
def _window_rule(f):
    """output_datatype (float by default); 1-D of `size` entries."""
    size = f.ints(0)
    return [(f.attr("output_datatype", 1), [size[0] if size and len(size) == 1 else None])]


@rule("MelWeightMatrix")
def _mel_weight_matrix_rule(f):
    """output_datatype (float by default); [dft_length // 2 + 1, num_mel_bins]."""
    bins, length = f.ints(0), f.ints(1)
    rows = length[0] // 2 + 1 if length and len(length) == 1 else None
    return [(f.attr("output_datatype", 1), [rows, bins[0] if bins and len(bins) == 1 else None])]
