"""ai.onnx.ml ops other than tree ensembles: encoders, scalers, linear and SVM models, ZipMap, vectorizers."""
import threading

import numpy as np

from .. import dtypes as dt
from ..errors import Fail, InvalidArgument
from .cast import elem_code
from .inference import rule, same_as_input
from .math import via_float32
from .registry import ML_DOMAIN, op


def _s(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _obj(values):
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


_BUILT = {}  # (build, ids of a node's attribute values) -> (those values, what build made of them)
_BUILT_LOCK = threading.Lock()  # (sessions run in several threads: one of them evicts at a time)


def built(build, attrs):
    """build(**attrs): what a model op makes of its attributes (arrays, a forest, weight tables), made once per
    node: a kernel gets the same attribute objects on every call, so they are recognized by identity (and held
    here, so that their ids are not reused); the 64 most recently built are kept. (weight_cache does this for
    weight arrays; attributes are lists, which it cannot reference weakly.)"""
    values = tuple(attrs.values())
    key = (build, *map(id, values))
    hit = _BUILT.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], values)):
        hit = (values, build(**attrs))
        with _BUILT_LOCK:
            if len(_BUILT) >= 64:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[key] = hit
    return hit[1]


def _rows(x):
    """A 2-D float view [N, F] of a 1-D or 2-D input (1-D is one row)."""
    if x.ndim == 1:
        return x.reshape(1, -1)
    if x.ndim != 2:
        return x.reshape(x.shape[0], -1)
    return x


# ------------------------------------------------------------------------------------------- post transforms
def _erfinv_approx(x):
    """The Winitzki approximation of erfinv that onnxruntime's PROBIT uses."""
    sgn = np.where(x < 0, -1.0, 1.0)
    t = (1.0 - x) * (1.0 + x)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log(t)
        v = 2.0 / (np.pi * 0.147) + 0.5 * lg
        v2 = lg / 0.147
        r = sgn * np.sqrt(-v + np.sqrt(v * v - v2))
    return np.where(t == 0, 0.0, r)


def _softmax_zero(s):
    m = s.max(axis=1, keepdims=True)
    e = np.where(np.abs(s) > 1e-7, np.exp(s - m), s * np.exp(-m))
    tot = e.sum(axis=1, keepdims=True)
    return np.where(tot == 0, 0.5, e / np.where(tot == 0, 1.0, tot))


def post_transform_scores(s, post):
    """Apply an ONNX-ML post_transform ('NONE', 'LOGISTIC', 'SOFTMAX', 'SOFTMAX_ZERO', 'PROBIT') row-wise."""
    s = np.asarray(s, np.float64)
    if post in (None, "NONE", 0):
        return s
    if post in ("LOGISTIC", 2):
        return 1.0 / (1.0 + np.exp(-s))
    if post in ("SOFTMAX", 1):
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if post in ("SOFTMAX_ZERO", 3):
        return _softmax_zero(s)
    if post in ("PROBIT", 4):
        return 1.41421356 * _erfinv_approx(s * 2 - 1)
    raise InvalidArgument(f"unsupported post_transform '{post}'")


def _labels_out(idx, ints, strings):
    if strings:
        return _obj([strings[i] for i in idx])
    if ints:
        return np.asarray(ints, np.int64)[idx]
    return np.asarray(idx, np.int64)


# ------------------------------------------------------------------------------------------- simple transforms
@op("ArrayFeatureExtractor", since=1, domain=ML_DOMAIN)
@via_float32
def array_feature_extractor(x, y):
    idx = np.asarray(y).astype(np.int64).ravel()
    if x.ndim == 0:
        raise InvalidArgument("ArrayFeatureExtractor: input must have rank >= 1")
    if not idx.size:
        raise InvalidArgument("Invalid Y argument: num_indices = 0")  # (onnxruntime's check)
    if idx.min() < 0 or idx.max() >= x.shape[-1]:
        raise InvalidArgument(f"ArrayFeatureExtractor: index out of range for last dimension {x.shape[-1]}")
    z = np.take(x, idx.astype(np.intp), axis=-1)  # intp: np.take refuses int64 on wasm32
    return z.reshape(1, -1) if x.ndim == 1 else z


@rule("ArrayFeatureExtractor", domain=ML_DOMAIN)
def _array_feature_extractor_rule(f):
    """Z of X's type; no dims (onnxruntime runs a Z declared of another rank than the kernel gives)."""
    return [(f.type(0), None)]


@op("Binarizer", since=1, domain=ML_DOMAIN)
@via_float32
def binarizer(x, *, threshold=0.0):
    return (x > np.asarray(threshold, x.dtype)).astype(x.dtype)


rule("Binarizer", domain=ML_DOMAIN)(same_as_input)  # (Y is T, as X: a declared Y of another type is refused)


@op("Scaler", since=1, domain=ML_DOMAIN)
@via_float32
def scaler(x, *, offset=None, scale=None):
    xs = x.astype(np.float32)
    off = np.asarray(offset if offset else [0.0], np.float32)
    sc = np.asarray(scale if scale else [1.0], np.float32)
    return ((xs - off) * sc).astype(np.float32)


@op("Normalizer", since=1, domain=ML_DOMAIN)
@via_float32
def normalizer(x, *, norm="MAX"):
    r = _rows(x).astype(np.float32)
    if norm == "MAX":
        d = r.max(axis=1, keepdims=True)
    elif norm == "L1":
        d = np.abs(r).sum(axis=1, keepdims=True)
    elif norm == "L2":
        d = np.sqrt((r * r).sum(axis=1, keepdims=True))
    else:
        raise InvalidArgument(f"Normalizer: unsupported norm '{norm}'")
    with np.errstate(divide="ignore", invalid="ignore"):
        y = r / d
    return y.reshape(x.shape).astype(np.float32)


@op("Imputer", since=1, domain=ML_DOMAIN)
@via_float32
def imputer(x, *, imputed_value_floats=None, imputed_value_int64s=None, replaced_value_float=0.0,
            replaced_value_int64=0):
    if x.dtype.kind == "f":
        vals, rep = imputed_value_floats, replaced_value_float
    else:
        vals, rep = imputed_value_int64s, replaced_value_int64
    if not vals:
        raise InvalidArgument("Imputer: imputed values are required for this input type")
    v = np.asarray(vals, x.dtype)
    r = _rows(x)
    if v.size not in (1, r.shape[1]):
        raise InvalidArgument(f"Imputer: {v.size} imputed values for {r.shape[1]} features")
    miss = np.isnan(r) if (x.dtype.kind == "f" and np.isnan(rep)) else (r == rep)
    return np.where(miss, np.broadcast_to(v, r.shape), r).reshape(x.shape).astype(x.dtype)


@op("OneHotEncoder", since=1, domain=ML_DOMAIN)
@via_float32
def one_hot_encoder(x, *, cats_int64s=None, cats_strings=None, zeros=1):
    if cats_strings:
        cats = {c: i for i, c in enumerate(cats_strings)}
        keys = [_s(v) for v in np.asarray(x).reshape(-1)]
    elif cats_int64s:
        cats = {int(c): i for i, c in enumerate(cats_int64s)}
        keys = [int(v) for v in np.asarray(x).reshape(-1)]
    else:
        raise InvalidArgument("OneHotEncoder: cats_int64s or cats_strings is required")
    pos = np.array([cats.get(k, -1) for k in keys], np.int64)
    if not zeros and (pos < 0).any():
        raise InvalidArgument("OneHotEncoder: unknown category with zeros=0")
    out = np.zeros((pos.size, len(cats)), np.float32)
    hit = pos >= 0
    out[np.nonzero(hit)[0], pos[hit]] = 1.0
    return out.reshape(np.asarray(x).shape + (len(cats),))


@op("CategoryMapper", since=1, domain=ML_DOMAIN)
@via_float32
def category_mapper(x, *, cats_int64s=None, cats_strings=None, default_int64=-1, default_string="_Unused"):
    if not cats_int64s or not cats_strings or len(cats_int64s) != len(cats_strings):
        raise InvalidArgument("CategoryMapper: cats_int64s and cats_strings must have the same non-zero length")
    a = np.asarray(x)
    if a.dtype.kind in "iu":
        table = dict(zip((int(v) for v in cats_int64s), cats_strings))
        out = _obj([table.get(int(v), default_string) for v in a.reshape(-1)])
    else:
        table = dict(zip(cats_strings, (int(v) for v in cats_int64s)))
        out = np.array([table.get(_s(v), default_int64) for v in a.reshape(-1)], np.int64)
    return out.reshape(a.shape)


@op("FeatureVectorizer", since=1, domain=ML_DOMAIN)
@via_float32
def feature_vectorizer(*inputs, inputdimensions=None):
    if not inputs:
        raise InvalidArgument("FeatureVectorizer: at least one input is required")
    dims = list(inputdimensions or [])
    n = _rows(inputs[0]).shape[0]
    parts = []
    for i, t in enumerate(inputs):
        r = _rows(np.asarray(t)).astype(np.float32)
        want = dims[i] if i < len(dims) else r.shape[1]
        if r.shape[1] >= want:
            parts.append(r[:, :want])
        else:
            parts.append(np.concatenate([r, np.zeros((n, want - r.shape[1]), np.float32)], axis=1))
    return np.concatenate(parts, axis=1).astype(np.float32)


@op("DictVectorizer", since=1, domain=ML_DOMAIN)
@via_float32
def dict_vectorizer(x, *, int64_vocabulary=None, string_vocabulary=None, ctx=None):
    maps = x if isinstance(x, list) else [x]
    if string_vocabulary:
        vocab = {v: i for i, v in enumerate(string_vocabulary)}
        keyf = _s
    elif int64_vocabulary:
        vocab = {int(v): i for i, v in enumerate(int64_vocabulary)}
        keyf = int
    else:
        raise InvalidArgument("DictVectorizer: a vocabulary is required")
    dtype = np.float32
    types = getattr(ctx, "input_types", None)
    tp = types[0] if types else None
    if tp is not None:
        from ..dtypes import np_dtype
        try:
            mt = tp.map_type if tp.HasField("map_type") else tp.sequence_type.elem_type.map_type
            dtype = np_dtype(mt.value_type.tensor_type.elem_type)
        except Exception:  # noqa: BLE001 - fall back to inspecting the values
            tp = None
    if tp is None:
        vals = [v for m in maps for v in m.values()]
        if vals and all(isinstance(v, (str, bytes)) for v in vals):
            dtype = np.dtype(object)
        elif vals and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals):
            dtype = np.int64
    out = np.zeros((len(maps), len(vocab)), dtype=dtype)
    if out.dtype == object:
        out[:] = ""
    for r, m in enumerate(maps):
        for k, v in m.items():
            j = vocab.get(keyf(k))
            if j is not None:
                out[r, j] = _s(v) if out.dtype == object else v
    return out


@op("ZipMap", since=1, domain=ML_DOMAIN)
@via_float32
def zip_map(x, *, classlabels_int64s=None, classlabels_strings=None):
    labels = list(classlabels_strings) if classlabels_strings else [int(v) for v in classlabels_int64s or []]
    if not labels:
        raise InvalidArgument("ZipMap: classlabels_int64s or classlabels_strings is required")
    r = _rows(x)
    if r.shape[1] != len(labels):
        raise InvalidArgument(f"ZipMap: input has {r.shape[1]} columns for {len(labels)} labels")
    return [dict(zip(labels, (float(v) for v in row))) for row in r]


# ------------------------------------------------------------------------------------------- LabelEncoder
def _decode_vals(a):
    a = np.asarray(a)
    if a.dtype == object or a.dtype.kind in "SU":
        return _obj([_s(v) for v in a.reshape(-1)])
    return a.reshape(-1)


def _label_encode(x, keys, values, default, out_dtype):
    a = np.asarray(x)
    flat = a.reshape(-1)
    if out_dtype == object:
        res = np.empty(flat.size, object)
    else:
        res = np.empty(flat.size, out_dtype)
    if a.dtype == object or a.dtype.kind in "SU":
        table = dict(zip((_s(k) for k in keys), values))
        res[:] = [table.get(_s(v), default) for v in flat] if flat.size else []
    else:
        keys = np.asarray(keys)
        if keys.dtype.kind in "OSU":
            raise Fail(f"LabelEncoder: the input type ({a.dtype}) and the keys' type (string) differ")
        kf = keys.astype(np.float64) if keys.dtype.kind == "f" else keys.astype(np.int64)
        order = np.argsort(kf, kind="stable")
        sk, sv = kf[order], np.asarray(values, dtype=res.dtype)[order] if out_dtype != object \
            else _obj(list(values))[order]
        fv = flat.astype(kf.dtype)
        pos = np.clip(np.searchsorted(sk, fv), 0, max(sk.size - 1, 0))
        found = (sk[pos] == fv) if sk.size else np.zeros(fv.shape, bool)
        if kf.dtype.kind == "f" and np.isnan(sk).any():  # a NaN key matches NaN inputs
            isn = np.isnan(fv)
            found = found | isn
            pos = np.where(isn, np.nonzero(np.isnan(sk))[0][0], pos)
        res[:] = default
        if sk.size:
            res[found] = sv[pos[found]]
    return res.reshape(a.shape)


@op("LabelEncoder", since=1, domain=ML_DOMAIN)
@via_float32
def label_encoder_1(x, *, classes_strings=None, default_int64=-1, default_string="_Unused"):
    classes = list(classes_strings or [])
    a = np.asarray(x)
    if a.dtype.kind in "iu":
        out = _obj([classes[int(v)] if 0 <= int(v) < len(classes) else default_string for v in a.reshape(-1)])
        return out.reshape(a.shape)
    return _label_encode(x, classes, list(range(len(classes))), default_int64, np.int64)


_VALUE_KINDS = (("values_strings", object, "default_string"), ("values_int64s", np.int64, "default_int64"),
                ("values_floats", np.float32, "default_float"))


def _label_encoder(x, keys, value_attrs, defaults, values_tensor=None, default_tensor=None):
    keys = [k for k in keys if k is not None]
    if len(keys) != 1:
        raise InvalidArgument("LabelEncoder: exactly one keys_* attribute is required")
    kv = _decode_vals(keys[0])
    if values_tensor is not None:
        vals = _decode_vals(values_tensor)
        vt = np.asarray(values_tensor)
        out_dtype = object if (vt.dtype == object or vt.dtype.kind in "SU") else vt.dtype
        if default_tensor is not None:
            d = _decode_vals(default_tensor)
            default = d[0]
        else:
            default = {object: defaults["default_string"]}.get(out_dtype, None)
            if default is None:
                default = defaults["default_float"] if np.dtype(out_dtype).kind == "f" else defaults["default_int64"]
    else:
        present = [(n, dt, dn) for n, dt, dn in _VALUE_KINDS if value_attrs.get(n) is not None]
        if len(present) != 1:
            raise InvalidArgument("LabelEncoder: exactly one values_* attribute is required")
        name, out_dtype, dname = present[0]
        vals = value_attrs[name]
        vals = _obj(list(vals)) if out_dtype is object else np.asarray(vals, out_dtype)
        default = defaults[dname]
        if default_tensor is not None:
            default = _decode_vals(default_tensor)[0]
    if len(vals) != len(kv):
        raise InvalidArgument(f"LabelEncoder: {len(kv)} keys but {len(vals)} values")
    return _label_encode(x, kv, vals, default, out_dtype)


@op("LabelEncoder", since=2, domain=ML_DOMAIN)
@via_float32
def label_encoder_2(x, *, default_float=-0.0, default_int64=-1, default_string="_Unused", keys_floats=None,
                    keys_int64s=None, keys_strings=None, values_floats=None, values_int64s=None,
                    values_strings=None):
    return _label_encoder(x, [keys_floats, keys_int64s, keys_strings],
                          {"values_floats": values_floats, "values_int64s": values_int64s,
                           "values_strings": values_strings},
                          {"default_float": default_float, "default_int64": default_int64,
                           "default_string": default_string})


@op("LabelEncoder", since=4, domain=ML_DOMAIN)
@via_float32
def label_encoder_4(x, *, default_float=-0.0, default_int64=-1, default_string="_Unused", default_tensor=None,
                    keys_floats=None, keys_int64s=None, keys_strings=None, keys_tensor=None, values_floats=None,
                    values_int64s=None, values_strings=None, values_tensor=None):
    return _label_encoder(x, [keys_floats, keys_int64s, keys_strings, keys_tensor],
                          {"values_floats": values_floats, "values_int64s": values_int64s,
                           "values_strings": values_strings},
                          {"default_float": default_float, "default_int64": default_int64,
                           "default_string": default_string}, values_tensor, default_tensor)


_VALUE_TYPES = {"values_strings": dt.STRING, "values_int64s": dt.INT64, "values_floats": dt.FLOAT}


@rule("LabelEncoder", domain=ML_DOMAIN)
def _label_encoder_rule(f):
    """Y of the values' type (opset 1: strings for integers, int64 for strings), no dims (onnxruntime runs a Y declared
    of another rank than X); Fail, as onnx's inference, where default_tensor's type is not the values'."""
    if f.opset < 2:
        t = f.type(0)
        return [(None if t is None else dt.STRING if t == dt.INT64 else dt.INT64, None)]
    values, default = f.attr("values_tensor"), f.attr("default_tensor")
    kinds = [_VALUE_TYPES[k] for k in _VALUE_TYPES if f.attr(k) is not None]
    t = elem_code(values) if values is not None else kinds[0] if len(kinds) == 1 else None
    d = elem_code(default) if default is not None else None
    if t is not None and d is not None and d != t:
        raise Fail(f"Node ({f.node.name}) Op (LabelEncoder) [ShapeInferenceError] The default tensor type {d} and the "
                   f"value type {t} must be the same in the LabelEncoder.")
    return [(t, None)]


# ------------------------------------------------------------------------------------------- linear models
def _binary_scores(scores):
    """Two-class models with one score column: expand to [-s, s] like onnxruntime."""
    s = scores[:, 0:1]
    return np.concatenate([-s, s], axis=1)


@op("LinearClassifier", since=1, domain=ML_DOMAIN)
@via_float32
def linear_classifier(x, *, coefficients, classlabels_ints=None, classlabels_strings=None, intercepts=None,
                      multi_class=0, post_transform="NONE"):
    r = _rows(x).astype(np.float64)
    flat = np.asarray(coefficients, np.float64)
    n_classes = len(intercepts) if intercepts else flat.size // max(r.shape[1], 1)
    # onnxruntime reads the first classes x features coefficients as that matrix (the features are the input's)
    coef = flat[:n_classes * r.shape[1]].reshape(n_classes, r.shape[1])
    scores = r @ coef.T
    if intercepts:
        scores = scores + np.asarray(intercepts, np.float64)
    n_labels = len(classlabels_strings or classlabels_ints or [])
    if coef.shape[0] == 1 and n_labels == 2:
        scores = _binary_scores(scores)
    scores = post_transform_scores(scores, post_transform)
    if scores.shape[1] > 1:
        labels = _labels_out(np.argmax(scores, axis=1), classlabels_ints, classlabels_strings)
    else:
        thr = 0.0 if post_transform == "NONE" else 0.5
        pos = scores[:, 0] >= thr
        if classlabels_strings:
            labels = _obj([classlabels_strings[0] if p else "" for p in pos])
        else:
            first = classlabels_ints[0] if classlabels_ints else 1
            labels = np.where(pos, first, 0).astype(np.int64)
    return labels, scores.astype(np.float32)


@op("LinearRegressor", since=1, domain=ML_DOMAIN)
@via_float32
def linear_regressor(x, *, coefficients=None, intercepts=None, post_transform="NONE", targets=1):
    r = _rows(x).astype(np.float64)
    coef = np.asarray(coefficients or [], np.float64).reshape(int(targets), -1)
    if coef.shape[1] != r.shape[1]:
        raise InvalidArgument(f"LinearRegressor: {coef.shape[1]} coefficients per target for {r.shape[1]} features")
    y = r @ coef.T
    if intercepts:
        y = y + np.asarray(intercepts, np.float64)
    return post_transform_scores(y, post_transform).astype(np.float32)


# ------------------------------------------------------------------------------------------- SVM
def _kernel(x, sv, kind, params):
    gamma = params[0] if len(params) > 0 else 0.0
    coef0 = params[1] if len(params) > 1 else 0.0
    degree = params[2] if len(params) > 2 else 0.0
    if kind == "LINEAR":
        return x @ sv.T
    if kind == "POLY":
        return (gamma * (x @ sv.T) + coef0) ** degree
    if kind == "RBF":
        d = (x * x).sum(1)[:, None] + (sv * sv).sum(1)[None, :] - 2 * (x @ sv.T)
        return np.exp(-gamma * np.maximum(d, 0))
    if kind == "SIGMOID":
        return np.tanh(gamma * (x @ sv.T) + coef0)
    raise InvalidArgument(f"SVM: unsupported kernel_type '{kind}'")


@op("SVMRegressor", since=1, domain=ML_DOMAIN)
@via_float32
def svm_regressor(x, *, coefficients=None, kernel_params=None, kernel_type="LINEAR", n_supports=0, one_class=0,
                  post_transform="NONE", rho=None, support_vectors=None):
    r = _rows(x).astype(np.float64)
    coef = np.asarray(coefficients or [], np.float64)
    rho0 = float(rho[0]) if rho else 0.0
    if n_supports > 0:
        sv = np.asarray(support_vectors, np.float64).reshape(int(n_supports), -1)
        s = _kernel(r, sv, kernel_type, list(kernel_params or [])) @ coef[: int(n_supports)] + rho0
    else:
        s = r @ coef + rho0
    if one_class:
        s = np.where(s > 0, 1.0, -1.0)
    return post_transform_scores(s.reshape(-1, 1), post_transform).astype(np.float32)


def _platt_coupling(pairwise, k):
    """Multiclass probabilities from pairwise ones (libsvm's coupling), for one sample."""
    q = np.empty((k, k))
    for t in range(k):
        q[t, t] = (pairwise[:t, t] ** 2).sum() + (pairwise[t + 1:, t] ** 2).sum()
        q[t, :t] = q[:t, t]
        q[t, t + 1:] = -pairwise[t + 1:, t] * pairwise[t, t + 1:]
    p = np.full(k, 1.0 / k)
    eps = 0.005 / k
    for _ in range(max(100, k)):
        qp = q @ p
        pqp = p @ qp
        if np.abs(qp - pqp).max() < eps:
            break
        for t in range(k):
            diff = (-qp[t] + pqp) / q[t, t]
            p[t] += diff
            pqp = (pqp + diff * (diff * q[t, t] + 2 * qp[t])) / (1 + diff) ** 2
            p /= 1 + diff
            qp = (qp + diff * q[t, :]) / (1 + diff)
    return p


def _svm_arrays(coefficients, rho, vectors_per_class, support_vectors):
    """SVMClassifier's coefficients, rho, vectors per class and support vectors (nsv, features) as arrays."""
    vpc = [int(v) for v in vectors_per_class or []]
    nsv = sum(vpc)
    sv = np.asarray(support_vectors, np.float64).reshape(nsv, -1) if nsv > 0 else None
    return np.asarray(coefficients or [], np.float64), np.asarray(rho or [0.0], np.float64), vpc, sv


@op("SVMClassifier", since=1, domain=ML_DOMAIN)
@via_float32
def svm_classifier(x, *, classlabels_ints=None, classlabels_strings=None, coefficients=None, kernel_params=None,
                   kernel_type="LINEAR", post_transform="NONE", prob_a=None, prob_b=None, rho=None,
                   support_vectors=None, vectors_per_class=None):
    r = _rows(x).astype(np.float64)
    labels_list = list(classlabels_strings or classlabels_ints or [])
    k = max(len(labels_list), 1)
    coef, rho, vpc, sv = built(_svm_arrays, {"coefficients": coefficients, "rho": rho,
                                             "vectors_per_class": vectors_per_class,
                                             "support_vectors": support_vectors})
    nsv = sum(vpc)
    all_pos = coef.size == 0 or coef.min() >= 0
    votes = None
    if nsv > 0:
        kern = _kernel(r, sv, kernel_type, list(kernel_params or []))  # (N, nsv)
        cf = coef.reshape(-1, nsv)
        start = np.concatenate([[0], np.cumsum(vpc)])
        cols, votes = [], np.zeros((r.shape[0], k))
        e = 0
        for i in range(k):
            for j in range(i + 1, k):
                si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
                s = rho[e] + kern[:, si] @ cf[j - 1, si] + kern[:, sj] @ cf[i, sj]
                cols.append(s)
                votes[np.arange(r.shape[0]), np.where(s > 0, i, j)] += 1
                e += 1
        scores = np.stack(cols, axis=1) if cols else np.zeros((r.shape[0], 0))
        if prob_a:
            pa, pb = np.asarray(prob_a, np.float64), np.asarray(prob_b, np.float64)
            probs = np.empty((r.shape[0], k))
            for n in range(r.shape[0]):
                pw = np.zeros((k, k))
                e = 0
                for i in range(k):
                    for j in range(i + 1, k):
                        v = 1.0 / (1.0 + np.exp(-(scores[n, e] * pa[e] + pb[e])))
                        v = min(max(1.0 - v, 1e-7), 1 - 1e-7)
                        pw[i, j], pw[j, i] = v, 1 - v
                        e += 1
                probs[n] = _platt_coupling(pw, k)
            scores, votes = probs, None
    else:
        cf = coef.reshape(k, -1)
        scores = r @ cf.T + rho[0]
    best_src = votes if votes is not None else scores
    best = np.argmax(best_src, axis=1)
    maxw = best_src[np.arange(r.shape[0]), best]
    second = False
    if rho.size == 1:  # one decision function (onnxruntime's binary conventions)
        if len(labels_list) == 2:
            second = True
            if not prob_a and all_pos:
                best = np.where(maxw >= 0.5, 1, best)
        else:
            best = np.where(maxw > 0, 1, 0)
    if scores.shape[1] == 1 and post_transform != "PROBIT":
        if second:
            scores = np.concatenate([-scores, scores], axis=1)
            if post_transform == "LOGISTIC":
                out_scores = 1.0 / (1.0 + np.exp(-scores))
            else:
                out_scores = post_transform_scores(scores, post_transform)
        else:
            out_scores = scores
    else:
        out_scores = post_transform_scores(scores, post_transform)
    if labels_list:
        labels = _labels_out(np.minimum(best, len(labels_list) - 1), classlabels_ints, classlabels_strings)
    else:
        labels = best.astype(np.int64)
    return labels, out_scores.astype(np.float32)
