"""SparseTensor (COO / CSR / block-sparse, host memory); sessions densify sparse feeds, sparsify outputs."""
import numpy as np

from .. import dtypes as dt
from .enums import OrtSparseFormat


def _read_only(a, dtype=None):
    a = np.asarray(a, dtype=dtype)
    v = a.view()
    v.flags.writeable = False
    return v


class _View:
    def __init__(self, **arrays):
        self._arrays = arrays

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._arrays:
            raise AttributeError(name)
        return lambda: self._arrays[name]


class SparseTensor:
    """A sparse tensor on the host: its format, dense shape, values and index arrays (read-only views). onnxide
    computes densely: a sparse feed is densified where a session takes it, and an output the model declares sparse
    comes back as COO of the dense result."""

    def __init__(self, fmt, dense_shape, values, indices):
        self._format, self._shape = OrtSparseFormat(fmt), [int(d) for d in dense_shape]
        if np.asarray(values).dtype.kind in "US":
            values = np.asarray(values).astype(str)
        self._values = _read_only(values)
        self._indices = {k: _read_only(v, np.int64) for k, v in indices.items()}

    # --- making ------------------------------------------------------------------------------------------------
    @classmethod
    def sparse_coo_from_numpy(cls, dense_shape, values, coo_indices, ort_device=None):
        """COO: `coo_indices` linear ([nnz]) or one row of coordinates per value ([nnz, rank])."""
        _host_only(ort_device)
        return cls(OrtSparseFormat.ORT_SPARSE_COO, dense_shape, values, {"indices": coo_indices})

    @classmethod
    def sparse_csr_from_numpy(cls, dense_shape, values, inner_indices, outer_indices, ort_device=None):
        """CSR of a 2-D tensor: column of each value (`inner_indices`), row starts (`outer_indices`, rows + 1)."""
        _host_only(ort_device)
        return cls(OrtSparseFormat.ORT_SPARSE_CSRC, dense_shape, values,
                   {"inner": inner_indices, "outer": outer_indices})

    @classmethod
    def blocksparse_from_numpy(cls, dense_shape, values, indices, ort_device=None):
        _host_only(ort_device)
        return cls(OrtSparseFormat.ORT_SPARSE_BLOCK_SPARSE, dense_shape, values, {"indices": indices})

    @classmethod
    def from_dense(cls, array):
        """COO with linear indices of `array`'s nonzero (non-empty) elements."""
        array = np.asarray(array)
        flat = array.reshape(-1)
        idx = np.flatnonzero(flat != "" if array.dtype == object else flat)
        return cls(OrtSparseFormat.ORT_SPARSE_COO, array.shape, flat[idx], {"indices": idx})

    # --- what it holds -----------------------------------------------------------------------------------------
    def format(self):
        return self._format

    def dense_shape(self):
        return list(self._shape)

    def data_type(self):
        return f"sparse_tensor({dt.NAMES[dt.code_of(self._values.dtype)]})"

    def device_name(self):
        return "cpu"

    def values(self):
        return self._values

    def as_coo_view(self):
        self._need(OrtSparseFormat.ORT_SPARSE_COO)
        return _View(indices=self._indices["indices"])

    def as_csrc_view(self):
        self._need(OrtSparseFormat.ORT_SPARSE_CSRC)
        return _View(inner=self._indices["inner"], outer=self._indices["outer"])

    def as_blocksparse_view(self):
        self._need(OrtSparseFormat.ORT_SPARSE_BLOCK_SPARSE)
        return _View(indices=self._indices["indices"])

    def _need(self, fmt):
        if self._format != fmt:
            raise RuntimeError(f"This sparse tensor is {self._format.name}, not {fmt.name}")

    def _get_c_tensor(self):
        return self

    def to_cuda(self, ort_device):
        """A copy on a CUDA device: onnxide has none, so this raises as onnxruntime's CPU build does."""
        raise RuntimeError("Can't copy a sparse tensor to CUDA: onnxide has no CUDA execution provider")

    def dense(self):
        """The dense numpy array."""
        vals = self._values.astype(object) if self._values.dtype.kind == "U" else self._values
        out = np.zeros(self._shape, dtype=vals.dtype)
        if vals.dtype == object:
            out[...] = ""
        if self._format == OrtSparseFormat.ORT_SPARSE_COO:
            idx = self._indices["indices"]
            if idx.ndim == 1:
                out.reshape(-1)[idx] = vals.reshape(-1)
            else:
                out[tuple(idx.T)] = vals.reshape(-1)
        elif self._format == OrtSparseFormat.ORT_SPARSE_CSRC:
            outer = self._indices["outer"]
            rows = np.repeat(np.arange(len(outer) - 1), np.diff(outer))
            out[rows, self._indices["inner"]] = vals.reshape(-1)
        else:
            raise RuntimeError("Densifying block-sparse tensors is not supported")
        return out

    def __repr__(self):
        return f"SparseTensor({self._format.name}, {self.data_type()}, dense_shape={self._shape})"


def _host_only(ort_device):
    if ort_device is not None and ort_device.device_type() != 0:
        raise RuntimeError(f"onnxide makes sparse tensors in CPU memory only, not on {ort_device}")


def as_feed(value):
    """A sparse feed (SparseTensor, or an OrtValue holding one) as the dense array the kernels take."""
    inner = getattr(value, "_value", value)
    return inner.dense() if isinstance(inner, SparseTensor) else value
