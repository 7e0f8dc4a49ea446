"""String ops: StringConcat, StringNormalizer, StringSplit, RegexFullMatch, and the n-gram TfIdfVectorizer."""
import re

import numpy as np

from ..dtypes import BOOL, FLOAT, INT64, STRING, code_of, type_string
from ..errors import Fail, InvalidArgument
from .inference import broadcast, fixed_type, rule
from .registry import op


def _s(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _str_array(x):
    """An object array of Python str with x's shape; InvalidArgument, as onnxruntime's kernels, for a tensor of
    another type (one whose type inference left unknown at load)."""
    a = np.asarray(x)
    if a.dtype != object and a.dtype.kind not in "SU":
        try:
            got = type_string(code_of(a.dtype))
        except KeyError:
            got = str(a.dtype)
        raise InvalidArgument(f"Unexpected input data type. Actual: ({got}) , expected: (tensor(string))")
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(a.reshape(-1)):
        flat[i] = _s(v)
    return out


@op("StringConcat", since=20)
def string_concat(x, y):
    a, b = _str_array(x), _str_array(y)
    try:
        return np.asarray(np.add(a, b), dtype=object).reshape(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise InvalidArgument(f"StringConcat: shapes {a.shape} and {b.shape} do not broadcast") from None


@op("StringNormalizer", since=10)
def string_normalizer(x, *, case_change_action="NONE", is_case_sensitive=0, locale=None, stopwords=None):
    a = _str_array(x)
    if a.ndim == 2 and a.shape[0] != 1 or a.ndim not in (1, 2):
        raise InvalidArgument(f"StringNormalizer: input must be [C] or [1, C], got shape {a.shape}")
    if case_change_action not in ("NONE", "LOWER", "UPPER"):
        raise InvalidArgument(f"StringNormalizer: unsupported case_change_action '{case_change_action}'")
    words = list(a.reshape(-1))
    if stopwords:
        if is_case_sensitive:
            stop = set(stopwords)
            words = [w for w in words if w not in stop]
        else:
            stop = {s.lower() for s in stopwords}
            words = [w for w in words if w.lower() not in stop]
    if case_change_action == "LOWER":
        words = [w.lower() for w in words]
    elif case_change_action == "UPPER":
        words = [w.upper() for w in words]
    if not words:
        words = [""]
    out = np.empty(len(words), dtype=object)
    out[:] = words
    return out.reshape(1, -1) if a.ndim == 2 else out


@op("StringSplit", since=20)
def string_split(x, *, delimiter=None, maxsplit=None):
    a = _str_array(x)
    sep = delimiter if delimiter else None  # empty/absent delimiter: split on runs of whitespace
    limit = -1 if maxsplit is None else int(maxsplit)
    parts = [v.split(sep, limit) if sep is not None else v.split(None, limit) for v in a.reshape(-1)]
    if sep is None:
        # str.split(None, n) keeps trailing whitespace in the last piece; strip it to match ONNX
        parts = [[p.strip() for p in ps] for ps in parts]
    width = max((len(p) for p in parts), default=0)
    subs = np.empty((len(parts), width), dtype=object)
    subs[:] = ""
    for i, ps in enumerate(parts):
        subs[i, : len(ps)] = ps
    lengths = np.array([len(p) for p in parts], dtype=np.int64)
    return subs.reshape(a.shape + (width,)), lengths.reshape(a.shape)


@op("RegexFullMatch", since=20)
def regex_full_match(x, *, pattern=None):
    if pattern is None:
        raise InvalidArgument("RegexFullMatch: the 'pattern' attribute is required")
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise InvalidArgument(f"RegexFullMatch: invalid pattern {pattern!r}: {e}") from None
    a = _str_array(x)
    out = np.fromiter((rx.fullmatch(v) is not None for v in a.reshape(-1)), dtype=bool, count=a.size)
    return out.reshape(a.shape)


@op("TfIdfVectorizer", since=9)
def tfidf_vectorizer(x, *, max_gram_length, max_skip_count, min_gram_length, mode, ngram_counts, ngram_indexes,
                     pool_int64s=None, pool_strings=None, weights=None):
    if mode not in ("TF", "IDF", "TFIDF"):
        raise InvalidArgument(f"TfIdfVectorizer: unsupported mode '{mode}'")
    if (pool_int64s is None) == (pool_strings is None):
        raise InvalidArgument("TfIdfVectorizer: exactly one of pool_int64s and pool_strings is required")
    if x.ndim not in (1, 2):
        raise InvalidArgument(f"TfIdfVectorizer: input must be [C] or [N, C], got shape {x.shape}")
    pool = list(pool_strings) if pool_strings is not None else [int(v) for v in pool_int64s]
    out_size = int(max(ngram_indexes)) + 1 if len(ngram_indexes) else 0
    w = np.ones(out_size) if weights is None or len(weights) == 0 else np.asarray(weights, np.float64)
    # token ids over the pool's vocabulary; tokens outside the pool get -1 and never match
    vocab = {}
    for t in pool:
        vocab.setdefault(t, len(vocab))
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    if pool_strings is not None:
        flat = [vocab.get(_s(v), -1) for v in rows.reshape(-1)]
    elif rows.dtype.kind in "OSU":  # (strings against an int64 pool: nothing matches, as onnxruntime counts)
        flat = [-1] * rows.size
    else:
        flat = [vocab.get(int(v), -1) for v in rows.reshape(-1)]
    ids = np.array(flat, dtype=np.int64).reshape(rows.shape)
    pool_ids = np.array([vocab[t] for t in pool], dtype=np.int64)
    n_rows, c = ids.shape
    counts = np.zeros((n_rows, out_size), np.float64)
    starts = list(ngram_counts) + [len(pool)]
    for n in range(1, len(starts)):
        if not 0 <= starts[n - 1] <= starts[n] or (starts[n] - starts[n - 1]) % n:
            raise Fail(f"TfIdfVectorizer: ngram_counts {list(ngram_counts)} do not split the pool of {len(pool)} into "
                       "whole n-grams")
    for what, v in (("min_gram_length", min_gram_length), ("max_gram_length", max_gram_length)):
        if v > len(ngram_counts):  # (onnxruntime's check: the pool has no n-grams that long)
            raise Fail(f"TfIdfVectorizer: {what} must be inbounds of ngram_counts: {v} <= {len(ngram_counts)}")
    out_idx = np.asarray(ngram_indexes, np.int64)
    for n in range(max(min_gram_length, 1), max_gram_length + 1):  # (n <= len(ngram_counts): checked above)
        lo, hi = int(starts[n - 1]), int(starts[n])
        if hi <= lo:
            continue
        grams = pool_ids[lo:hi].reshape(-1, n)  # pool n-grams of this length
        gram_out = out_idx[_ngram_positions(starts, n, lo, hi)]
        for skip in range(1 if n == 1 else max_skip_count + 1):
            step = skip + 1
            span = (n - 1) * step
            if span >= c:
                break
            pos = np.arange(c - span)[:, None] + np.arange(n)[None, :] * step  # (P, n)
            wins = ids[:, pos].reshape(-1, n)  # (rows*P, n)
            allg = np.concatenate([grams, wins], axis=0)
            _, inv = np.unique(allg, axis=0, return_inverse=True)
            inv = inv.ravel()
            table = np.full(inv.max() + 1, -1, np.int64)
            table[inv[: grams.shape[0]]] = gram_out
            hit = table[inv[grams.shape[0]:]].reshape(n_rows, -1)
            valid = (wins >= 0).all(axis=1).reshape(n_rows, -1) & (hit >= 0)
            r_idx = np.broadcast_to(np.arange(n_rows)[:, None], hit.shape)
            np.add.at(counts, (r_idx[valid], hit[valid]), 1.0)
    if mode == "TF":
        y = counts
    elif mode == "IDF":
        y = (counts > 0) * w[None, :]
    else:
        y = counts * w[None, :]
    y = y.astype(np.float32)
    return y.reshape(-1) if x.ndim == 1 else y


def _ngram_positions(starts, n, lo, hi):
    """Positions in ngram_indexes of the pool n-grams stored at pool[lo:hi] (one index per n-gram)."""
    before = 0
    for m in range(1, n):
        before += (int(starts[m]) - int(starts[m - 1])) // m
    return np.arange(before, before + (hi - lo) // n)


@rule("StringConcat")
def _string_concat_rule(f):
    return [(STRING, broadcast([f.dims(0), f.dims(1)]))]


@rule("StringNormalizer")
def _string_normalizer_rule(f):
    """strings of the input's rank (stopwords may drop entries of the last axis)."""
    d = f.dims(0)
    return [(STRING, None if d is None else d[:-1] + [None])]


@rule("StringSplit")
def _string_split_rule(f):
    """The substrings: the input's dims plus one; the substring counts: int64 of the input's dims."""
    d = f.dims(0)
    return [(STRING, None if d is None else d + [None]), (INT64, d)]


rule("RegexFullMatch")(fixed_type(BOOL))


@rule("TfIdfVectorizer")
def _tfidf_rule(f):
    """float [C] or [N, C] (C = max(ngram_indexes) + 1)."""
    d, idx = f.dims(0), f.attr("ngram_indexes")
    size = int(max(idx)) + 1 if idx is not None and len(idx) else 0
    return [(FLOAT, None if d is None else d[:-1] + [size])]
