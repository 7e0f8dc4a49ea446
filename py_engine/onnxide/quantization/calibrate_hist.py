"""Histogram calibrators (Entropy, Percentile, Distribution): every value of each tensor, then a range."""
import numpy as np

from ..proto.onnx_api import onnx
from .calibrate import CalibraterBase, CalibrationMethod, TensorData, TensorsData


class HistogramCalibrater(CalibraterBase):
    """Adds the selected tensors as graph outputs and keeps every value seen, per tensor."""
    calibration_method = None

    def __init__(self, model_path, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                 use_external_data_format=False, method="percentile", symmetric=False, num_bins=128,
                 num_quantized_bins=2048, percentile=99.999, scenario="same"):
        super().__init__(model_path, op_types_to_calibrate, augmented_model_path, symmetric,
                         use_external_data_format)
        self.method, self.num_bins, self.num_quantized_bins = method, num_bins, num_quantized_bins
        self.percentile, self.scenario = percentile, scenario
        self.values = {}
        self.augment_graph()

    def augment_graph(self):
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        self.tensors, types = self.select_tensors_to_calibrate(model)
        present = {o.name for o in model.graph.output}
        for name in self.tensors:
            if name not in present:
                model.graph.output.append(onnx.helper.make_tensor_value_info(name, types[name], None))
        self.augment_model = model

    def clear_collected_data(self):
        self.values = {}

    def collect_data(self, data_reader):
        for run in self._run(data_reader):
            for name in self.tensors:
                v = np.asarray(run[name], dtype=np.float32).ravel()
                self.values.setdefault(name, []).append(v)

    def compute_data(self):
        out = {}
        for name in self.tensors:
            v = np.concatenate(self.values.get(name) or [np.zeros(0, np.float32)])
            out[name] = self.tensor_range(v if v.size else np.zeros(1, np.float32))
        return TensorsData(self.calibration_method, out)

    def tensor_range(self, v):
        raise NotImplementedError


def _f32(x):
    return np.array(x, dtype=np.float32)


class PercentileCalibrater(HistogramCalibrater):
    """The range holding `percentile` % of the values (of |x| when symmetric), kept within the values' own min and
    max (a symmetric range of non-negative values starts at their minimum)."""
    calibration_method = CalibrationMethod.Percentile

    def tensor_range(self, v):
        if self.symmetric:
            t = np.percentile(np.abs(v), self.percentile)
            lo, hi = -t, t
        else:
            tail = (100.0 - self.percentile) / 2
            lo, hi = np.percentile(v, [tail, 100.0 - tail])
        return TensorData(lowest=_f32(max(lo, v.min())), highest=_f32(min(hi, v.max())))


class EntropyCalibrater(HistogramCalibrater):
    """The |x| threshold whose num_quantized_bins-bin quantization keeps the histogram's KL divergence least."""
    calibration_method = CalibrationMethod.Entropy

    def tensor_range(self, v):
        hist, edges = np.histogram(np.abs(v), bins=self.num_bins)
        t = _kl_threshold(hist.astype(np.float64), edges, self.num_quantized_bins)
        return TensorData(lowest=_f32(-t), highest=_f32(t), hist=hist, hist_edges=edges.astype(np.float32))


def _kl_threshold(hist, edges, nq):
    nq = min(nq, len(hist))
    best, best_i = None, len(hist)
    for i in range(nq, len(hist) + 1):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()
        chunks = np.array_split(hist[:i], nq)
        q = np.concatenate([np.where(c > 0, c.sum() / max((c > 0).sum(), 1), 0) for c in chunks])
        ps, qs = p.sum(), q.sum()
        if ps == 0 or qs == 0:
            continue
        p, q = p / ps, q / qs
        mask = p > 0
        kl = np.sum(p[mask] * np.log(p[mask] / np.maximum(q[mask], 1e-12)))
        if best is None or kl < best:
            best, best_i = kl, i
    return edges[best_i]


class DistributionCalibrater(HistogramCalibrater):
    """Mean, standard deviation and histogram of each tensor (for float 8 scales), with its min / max."""
    calibration_method = CalibrationMethod.Distribution

    def tensor_range(self, v):
        hist, edges = np.histogram(v, bins=self.num_bins)
        return TensorData(avg=_f32(v.mean()), std=_f32(v.std()), hist=hist, hist_edges=edges.astype(np.float32),
                          lowest=_f32(v.min()), highest=_f32(v.max()))


def entropy(pk, qk=None, base=None, axis=0):
    """Shannon entropy of pk, or the Kullback-Leibler divergence of pk from qk (both normalised), as scipy's."""
    pk = np.asarray(pk, dtype=np.float64)
    pk = pk / np.sum(pk, axis=axis, keepdims=True)
    if qk is None:
        vec = np.where(pk > 0, -pk * np.log(np.where(pk > 0, pk, 1)), np.where(pk == 0, 0.0, -np.inf))
    else:
        qk = np.asarray(qk, dtype=np.float64)
        qk = qk / np.sum(qk, axis=axis, keepdims=True)
        both = (pk > 0) & (qk > 0)
        ratio = np.where(both, pk / np.where(both, qk, 1), 1)
        vec = np.where(both, pk * np.log(ratio), np.where((pk == 0) & (qk >= 0), 0.0, np.inf))
    s = np.sum(vec, axis=axis)
    return s / np.log(base) if base is not None else s
