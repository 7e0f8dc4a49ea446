"""Byte codec for conformance values between CPython and Pyodide (numpy + json only; runs on both sides):
arrays (any ONNX element type, by ONNX code), sequences, maps, optionals (None), Python scalars.

Blob layout: 8-byte little-endian header length, JSON header, then raw array bytes addressed by (offset, nbytes).
"""
import base64
import json
import struct

import numpy as np


SUB_BYTE_INTS = {"int4": np.int8, "int2": np.int8, "uint4": np.uint8, "uint2": np.uint8}
SUB_BYTE_CODES = {22: np.int8, 26: np.int8, 21: np.uint8, 25: np.uint8}  # ONNX INT4, INT2, UINT4, UINT2


class Writer:
    def __init__(self):
        self.chunks, self.size = [], 0

    def raw(self, data):
        data = bytes(data)
        off = self.size
        self.chunks.append(data)
        self.size += len(data)
        return [off, len(data)]

    def value(self, v, code_of, declared=None):
        """JSON-able description of `v`; code_of(dtype, declared) gives the ONNX element type of an array."""
        if v is None:
            return {"k": "none"}
        if isinstance(v, (list, tuple)):
            return {"k": "seq", "items": [self.value(x, code_of) for x in v]}
        if isinstance(v, dict):
            return {"k": "map", "items": [[k if isinstance(k, (int, str)) else k.item(), self.value(x, code_of)]
                                          for k, x in v.items()]}
        if isinstance(v, (bool, int, float, str)):
            return {"k": "py", "v": v}
        a = np.asarray(v)
        if a.dtype == object or a.dtype.kind in "US":
            items = [x.decode("latin-1") if isinstance(x, bytes) else str(x) for x in a.reshape(-1)]
            kinds = ["b" if isinstance(x, bytes) else "s" for x in a.reshape(-1)]
            return {"k": "str", "shape": list(a.shape), "v": items, "kinds": kinds}
        code = int(code_of(a.dtype, declared))
        if a.dtype.name in SUB_BYTE_INTS:  # ml_dtypes keeps only the nibble: send values, one per byte
            a = a.astype(SUB_BYTE_INTS[a.dtype.name])
        shape = list(a.shape)  # before ascontiguousarray, which makes 0-d arrays 1-d
        return {"k": "arr", "code": code, "shape": shape,
                "raw": self.raw(np.ascontiguousarray(a).reshape(-1).view(np.uint8).tobytes())}

    def blob(self, header):
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + b"".join(self.chunks)


def read(blob):
    """(header, payload memoryview)."""
    mv = memoryview(blob)
    (n,) = struct.unpack("<Q", bytes(mv[:8]))
    return json.loads(bytes(mv[8:8 + n])), mv[8 + n:]


def value(d, payload, np_dtype):
    """Decode one described value; np_dtype(code) gives the numpy dtype for an ONNX element type."""
    k = d["k"]
    if k == "none":
        return None
    if k == "seq":
        return [value(x, payload, np_dtype) for x in d["items"]]
    if k == "map":
        return {key: value(x, payload, np_dtype) for key, x in d["items"]}
    if k == "py":
        return d["v"]
    if k == "str":
        items = [x.encode("latin-1") if kind == "b" else x for x, kind in zip(d["v"], d["kinds"])]
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
        return arr.reshape(d["shape"])
    off, n = d["raw"]
    if d["code"] in SUB_BYTE_CODES:
        vals = np.frombuffer(bytes(payload[off:off + n]), SUB_BYTE_CODES[d["code"]]).reshape(d["shape"])
        return vals.astype(np_dtype(d["code"]))
    dtype = np.dtype(np_dtype(d["code"]))
    data = bytes(payload[off:off + n])
    if dtype.itemsize == 0 or n % dtype.itemsize:
        raise ValueError(f"{n} bytes do not hold {dtype}")
    return np.frombuffer(data, dtype=dtype).reshape(d["shape"]).copy()


def b64(data):
    return base64.b64encode(bytes(data)).decode()
