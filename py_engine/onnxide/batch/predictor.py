"""OnnxPredictor: a callable class for ray.data.Dataset.map_batches that holds one InferenceSession per actor."""
import numpy as np

from .feeds import convert_column, input_dtype, row_shape
from .model_source import resolve
from .providers import actor_providers

ON_ERROR = ("raise", "column")


class BadRowsError(ValueError):
    """Raised (on_error='raise') when rows of a batch cannot be fed to, or run by, the model."""


class OnnxPredictor:
    """Scores batches (dicts of numpy columns) with a model loaded once, when the actor starts.

    model: a path, bytes, or an object ref from `put_model` (fetched from Ray's object store).
    inputs: {model input: column}; an input not named reads the column of its own name.
    dtypes: {model input: numpy dtype} to override the model's declared type.
    preprocess: batch -> batch, run before the inputs are read (decode, resize, normalise...).
    outputs: model outputs to compute (default all); output_columns: {output: column} to rename them.
    keep_columns: input columns copied to the result (default: the one-value-per-row ones: ids, paths, labels).
    on_error: 'raise' fails the job on a bad row; 'column' scores the others and writes the reason to
    error_column ('' for good rows; a bad row's outputs are NaN, or 0 for integer outputs)."""

    def __init__(self, model, *, inputs=None, dtypes=None, preprocess=None, outputs=None, output_columns=None,
                 keep_columns=None, providers=None, threads=1, gpu=False, on_error="raise", error_column="error",
                 session_options=None):
        import onnxide

        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
        so = session_options or onnxide.SessionOptions()
        if threads:
            so.intra_op_num_threads = int(threads)
        self.session = onnxide.InferenceSession(resolve(model), so, providers=actor_providers(providers, gpu))
        args = self.session.get_inputs()
        inputs, dtypes = dict(inputs or {}), dict(dtypes or {})
        unknown = (set(inputs) | set(dtypes)) - {a.name for a in args}
        if unknown:
            raise ValueError(f"no model input named {sorted(unknown)}; the model's inputs: {[a.name for a in args]}")
        self.feeds = [(a.name, inputs.get(a.name, a.name), np.dtype(dtypes.get(a.name) or input_dtype(a)),
                       row_shape(a), (a.shape or [None])[0] == 1) for a in args]
        outs = self.session.get_outputs()
        self.outputs = list(outputs or [o.name for o in outs])
        self.columns = {o: (output_columns or {}).get(o, o) for o in self.outputs}
        self.declared = {o.name: [d if isinstance(d, int) else 1 for d in (o.shape or [])[1:]] for o in outs}
        self.keep, self.preprocess = keep_columns, preprocess
        self.on_error, self.error_column = on_error, error_column

    def __call__(self, batch):
        n = len(next(iter(batch.values()))) if batch else 0
        result = {k: v for k, v in batch.items() if self._kept(k, v)}
        prepared, bad = self._prepare(batch, n)
        feeds, rows = self._feeds(prepared, n, bad)
        if bad and self.on_error == "raise":
            first = sorted(bad)[:3]
            raise BadRowsError(f"{len(bad)} of {n} rows cannot be scored; " +
                               "; ".join(f"row {i} of the batch: {bad[i]}" for i in first) +
                               " (on_error='column' writes such rows with an error column instead)")
        values = self._run(feeds, rows, bad) if rows else {}
        for name in self.outputs:
            result[self.columns[name]] = self._column(name, values.get(name), rows, n)
        if self.on_error == "column":
            result[self.error_column] = np.array([bad.get(i, "") for i in range(n)], dtype=object)
        return result

    def _kept(self, name, value):
        if self.keep is not None:
            return name in self.keep
        return isinstance(value, np.ndarray) and value.ndim == 1 and (
            value.dtype != object or all(v is None or np.ndim(v) == 0 for v in value))

    def _prepare(self, batch, n):
        if self.preprocess is None:
            return batch, {}
        try:
            return self.preprocess(batch), {}
        except Exception:
            if self.on_error == "raise" or n <= 1:
                raise
        parts, bad = [], {}  # find the rows the hook fails on, one row at a time
        for i in range(n):
            try:
                parts.append((i, self.preprocess({k: v[i:i + 1] for k, v in batch.items()})))
            except Exception as e:  # noqa: BLE001  (any failure of user code is the row's error)
                bad[i] = f"preprocess: {type(e).__name__}: {e}"
        merged = {}
        for name, _col, _dtype, _shape, _single in self.feeds:
            col = _col
            column = np.empty(n, dtype=object)
            for i, part in parts:
                column[i] = np.asarray(part[col])[0] if col in part else None
            merged[col] = column
        return merged, bad

    def _feeds(self, batch, n, bad):
        converted = []
        for name, col, dtype, shape, _single in self.feeds:
            if col not in batch:
                raise KeyError(f"model input {name!r} reads column {col!r}, which the batch lacks "
                               f"(columns: {sorted(batch)}); map it with inputs={{{name!r}: COLUMN}}")
            good, b = convert_column(batch[col], dtype, shape)
            for i, why in b.items():
                bad.setdefault(i, f"column {col!r}: {why}")
            converted.append((name, good))
        rows = [i for i in range(n) if i not in bad]
        feeds = {}
        for name, good in converted:
            if isinstance(good, np.ndarray):
                feeds[name] = good if len(rows) == n else good[rows]
            else:
                feeds[name] = np.stack([good[i] for i in rows]) if rows else None
        return feeds, rows

    def _run(self, feeds, rows, bad):
        single = any(s for *_, s in self.feeds)
        try:
            if not single:
                return dict(zip(self.outputs, self.session.run(self.outputs, feeds)))
            per_row = [self.session.run(self.outputs, {k: v[j:j + 1] for k, v in feeds.items()})
                       for j in range(len(rows))]
            return {o: np.concatenate([r[k] for r in per_row]) for k, o in enumerate(self.outputs)}
        except Exception:  # noqa: BLE001
            if self.on_error == "raise":
                raise
        outs = {}  # isolate the rows the model fails on
        keep = []
        for j, i in enumerate(list(rows)):
            try:
                r = self.session.run(self.outputs, {k: v[j:j + 1] for k, v in feeds.items()})
                outs[i] = r
                keep.append(i)
            except Exception as e:  # noqa: BLE001
                bad[i] = f"run: {type(e).__name__}: {e}"
        rows[:] = keep
        return {o: np.concatenate([outs[i][k] for i in keep]) for k, o in enumerate(self.outputs)} if keep else {}

    def _column(self, name, value, rows, n):
        if value is not None:
            self.declared[name] = list(value.shape[1:])
            if len(rows) == n:
                return value
            dtype = value.dtype
        else:
            arg = next(o for o in self.session.get_outputs() if o.name == name)
            dtype = input_dtype(arg)
        fill = np.nan if np.issubdtype(dtype, np.floating) else 0
        column = np.full([n] + self.declared[name], fill, dtype=dtype)
        if value is not None:
            column[rows] = value
        return column

    def row_bytes(self, batch):
        """Bytes one row of batch takes as model inputs and outputs (scored here, on the caller's process)."""
        n = len(next(iter(batch.values())))
        prepared, bad = self._prepare(batch, n)
        feeds, rows = self._feeds(prepared, n, bad)
        if not rows:
            raise BadRowsError("no row of the sample batch can be scored: " + "; ".join(bad.values()))
        outs = self._run(feeds, rows, bad)
        return sum(v.nbytes for v in feeds.values()) // len(rows) + sum(v.nbytes for v in outs.values()) // len(rows)
