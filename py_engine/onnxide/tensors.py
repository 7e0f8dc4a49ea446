"""TensorProto ⇄ numpy: raw_data (zero-copy views), typed fields, packed sub-byte types, exotic dtypes in both
representations (ml_dtypes or structured, see dtypes.py), external data, sparse."""
import math
import os
import weakref

import numpy as np

from . import dtypes as dt
from .errors import Fail, InvalidGraph
from .proto import TensorProto

_PACKED_BITS = {dt.INT4: 4, dt.UINT4: 4, dt.FLOAT4E2M1: 4, dt.INT2: 2, dt.UINT2: 2}
_SIGNED_PACKED = {dt.INT4, dt.INT2}


def unpack_bits(raw_u8, code, count):
    """Unpack 4- or 2-bit elements (low bits first) into one byte each, sign-extended for signed kinds."""
    bits = _PACKED_BITS[code]
    per = 8 // bits
    u = np.asarray(raw_u8, dtype=np.uint8)
    parts = [(u >> (bits * k)) & ((1 << bits) - 1) for k in range(per)]
    vals = np.stack(parts, axis=-1).reshape(-1)[:count]
    if code in _SIGNED_PACKED:
        vals = vals.astype(np.int8)
        vals = np.where(vals >= (1 << (bits - 1)), vals - (1 << bits), vals).astype(np.int8)
    return dt.wrap(vals, code)  # float4e2m1: the 4-bit pattern; int kinds: the value


def pack_bits(arr, code):
    bits = _PACKED_BITS[code]
    per = 8 // bits
    u = dt.raw(arr, code).reshape(-1).view(np.uint8) & np.uint8((1 << bits) - 1)
    pad = (-u.size) % per
    u = np.concatenate([u, np.zeros(pad, np.uint8)]).reshape(-1, per)
    out = np.zeros(u.shape[0], np.uint8)
    for k in range(per):
        out |= (u[:, k] << (bits * k)).astype(np.uint8)
    return out


def _external_bytes(t, base_dir):
    info = {e.key: e.value for e in t.external_data}
    loc = info.get("location")
    if not loc:
        raise InvalidGraph(f"Tensor '{t.name}' has external data without a location")
    if base_dir is None:
        raise InvalidGraph(f"Tensor '{t.name}' uses external data '{loc}' but the model was not loaded from a path")
    root = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(root, loc))
    if os.path.commonpath([root, path]) != root:
        raise InvalidGraph(f"External data path '{loc}' of tensor '{t.name}' leaves the model's folder")
    if not os.path.isfile(path):
        raise InvalidGraph(f"External data file '{loc}' of tensor '{t.name}' not found")
    offset = int(info.get("offset", 0) or 0)
    length = info.get("length")
    size = os.path.getsize(path)
    length = size - offset if length in (None, "") else int(length)
    if offset < 0 or length < 0 or offset + length > size:
        raise InvalidGraph(f"External data of tensor '{t.name}' (offset {offset}, length {length}) is out of "
                           f"bounds of '{loc}' ({size} bytes)")
    if length == 0:
        return b""
    data = np.fromfile(path, dtype=np.uint8, count=length, offset=offset)  # read now: a mapped file that shrank
    if data.size != length:  # later would fault (SIGBUS) on access
        raise InvalidGraph(f"External data file '{loc}' of tensor '{t.name}' changed size while loading")
    return data


_COPIES = weakref.WeakValueDictionary()  # (address, bytes, dtype) of a view -> its aligned native copy


def _native_copy(view, target):
    """An aligned native-order copy of a misaligned or byte-swapped view of model bytes. A copy still alive of the same
    values at the same address is reused (a session loads its model again for each specialized executor: a 46 MB
    embedding table would be held twice); copies are read-only, as the views of immutable bytes are."""
    key = (view.__array_interface__["data"][0], view.nbytes, view.dtype.str)
    old = _COPIES.get(key)
    # (compared as bytes, not values: -0.0 == 0.0, and NaN payloads would pass as equal)
    if old is not None and old.dtype == target and np.array_equal(old.reshape(-1).view(np.uint8), view.view(np.uint8)):
        return old
    arr = view.astype(target)
    arr.flags.writeable = False
    _COPIES[key] = arr
    return arr


def to_numpy(t, base_dir=None):
    """Decode a TensorProto into a numpy array (a view over the model bytes where the layout allows)."""
    code = t.data_type
    shape = tuple(int(d) for d in t.dims)
    count = math.prod(shape)
    if code == dt.UNDEFINED or code not in dt.NAMES:
        raise InvalidGraph(f"Tensor '{t.name}' has unsupported data type {code}")
    target = dt.np_dtype(code)
    if t.data_location == 1:
        raw = _external_bytes(t, base_dir)
    else:
        raw = t.raw_data if len(t.raw_data) else None
    try:
        if code == dt.STRING:
            arr = np.array([bytes(s).decode("utf-8", errors="surrogateescape") for s in t.string_data],
                           dtype=object)
        elif raw is not None:
            if code in _PACKED_BITS:
                arr = unpack_bits(np.frombuffer(raw, np.uint8), code, count)
            elif code == dt.BOOL:
                arr = np.frombuffer(raw, dtype=np.uint8).view(np.bool_)
            elif dt.is_exotic(code):  # bfloat16 / float8: little-endian bit patterns
                arr = dt.wrap(np.frombuffer(raw, dtype="<u2" if target.itemsize == 2 else np.uint8), code)
            else:
                arr = np.frombuffer(raw, dtype=target.newbyteorder("<") if target.itemsize > 1 else target)
                if not arr.dtype.isnative or not arr.flags.aligned:
                    # copied when misaligned too: numpy hands only aligned arrays to BLAS and its fast loops
                    arr = _native_copy(arr, target)
        else:
            arr = _from_typed_fields(t, code, target, count)
        if arr.size != count or count < 0:
            raise ValueError
        return arr.reshape(shape)
    except ValueError:
        raise InvalidGraph(f"Tensor '{t.name}' data does not match its dims {list(shape)} and type "
                           f"{dt.NAMES[code]} ({count} values expected)") from None


def _from_typed_fields(t, code, target, count):
    if code in (dt.FLOAT, dt.COMPLEX64):
        a = np.asarray(t.float_data, dtype=np.float32)
        return a.view(np.complex64) if code == dt.COMPLEX64 else a
    if code in (dt.DOUBLE, dt.COMPLEX128):
        a = np.asarray(t.double_data, dtype=np.float64)
        return a.view(np.complex128) if code == dt.COMPLEX128 else a
    if code == dt.INT64:
        return np.asarray(t.int64_data, dtype=np.int64)
    if code in (dt.UINT32, dt.UINT64):
        return np.asarray(t.uint64_data, dtype=np.uint64).astype(target)
    ints = np.asarray(t.int32_data, dtype=np.int64)
    if code in _PACKED_BITS:
        return unpack_bits(ints.astype(np.uint8), code, count)
    if code == dt.BOOL:
        return ints.astype(np.bool_)
    if target.kind in "iu":
        return ints.astype(target)
    # float16 / bfloat16 / float8 kinds: int32_data holds the bit patterns
    bits = np.uint16 if target.itemsize == 2 else np.uint8
    if dt.is_exotic(code):
        return dt.wrap(ints.astype(bits), code)
    return ints.astype(bits).view(target)


def from_numpy(arr, name=""):
    """Encode a numpy array as a TensorProto (raw_data little-endian; strings in string_data)."""
    arr = np.asarray(arr)
    code = dt.exotic_code(arr.dtype) or dt.code_of(arr.dtype)  # exotic arrays of either representation
    t = TensorProto(name=name, dims=list(arr.shape), data_type=code)
    if code == dt.STRING:
        t.string_data = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in arr.reshape(-1)]
    elif code in _PACKED_BITS:
        t.raw_data = pack_bits(arr, code).tobytes()
    elif dt.is_exotic(code):
        bits = dt.raw(arr, code)
        t.raw_data = bits.astype(bits.dtype.newbyteorder("<"), order="C").tobytes()
    else:
        a = np.ascontiguousarray(arr)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        t.raw_data = a.tobytes()
    return t


def sparse_to_numpy(st, base_dir=None):
    """Densify a SparseTensorProto (COO: flat [NNZ] or [NNZ, rank] indices)."""
    values = to_numpy(st.values, base_dir)
    shape = tuple(int(d) for d in st.dims)
    dense = np.zeros(shape, dtype=values.dtype)
    idx = to_numpy(st.indices, base_dir).astype(np.int64)
    if idx.size:
        if idx.ndim == 1:
            dense.reshape(-1)[idx] = values.reshape(-1)
        else:
            dense[tuple(idx.T)] = values.reshape(-1)
    if values.dtype == object and dense.size != idx.shape[0]:
        raise Fail(f"Sparse string tensor '{st.values.name}' must be fully specified")
    return dense
