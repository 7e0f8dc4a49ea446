"""A minimal FlatBuffers reader / writer (scalars, strings, vectors, tables): enough for `.onnx_adapter`."""
import struct

import numpy as np


class Table:
    """A table in a buffer: `scalar(i, fmt)`, `string(i)`, `array(i, dtype)`, `tables(i)` read field i."""

    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        vt_size = struct.unpack_from("<H", buf, vt)[0]
        self._fields = [struct.unpack_from("<H", buf, vt + 4 + 2 * i)[0] for i in range((vt_size - 4) // 2)]

    def _at(self, i):
        return self.pos + self._fields[i] if i < len(self._fields) and self._fields[i] else None

    def _ref(self, i):
        at = self._at(i)
        return None if at is None else at + struct.unpack_from("<I", self.buf, at)[0]

    def scalar(self, i, fmt="<i", default=0):
        at = self._at(i)
        return default if at is None else struct.unpack_from(fmt, self.buf, at)[0]

    def string(self, i):
        ref = self._ref(i)
        if ref is None:
            return ""
        n = struct.unpack_from("<I", self.buf, ref)[0]
        return bytes(self.buf[ref + 4:ref + 4 + n]).decode("utf-8")

    def array(self, i, dtype):
        ref = self._ref(i)
        if ref is None:
            return np.zeros(0, dtype)
        n = struct.unpack_from("<I", self.buf, ref)[0]
        return np.frombuffer(self.buf, dtype=np.dtype(dtype).newbyteorder("<"), count=n, offset=ref + 4)

    def tables(self, i):
        ref = self._ref(i)
        if ref is None:
            return []
        n = struct.unpack_from("<I", self.buf, ref)[0]
        return [Table(self.buf, ref + 4 + 4 * k + struct.unpack_from("<I", self.buf, ref + 4 + 4 * k)[0])
                for k in range(n)]


def root(buf, identifier=None):
    """The root table of `buf` (checking its 4-byte file identifier when given)."""
    if len(buf) < 8:
        raise ValueError("buffer too small for a FlatBuffer")
    if identifier is not None and bytes(buf[4:8]) != identifier:
        raise ValueError(f"file identifier {bytes(buf[4:8])!r} is not {identifier!r}")
    return Table(buf, struct.unpack_from("<I", buf, 0)[0])


class Builder:
    """Writes a buffer front to back: a table's referenced objects follow it (offsets point forward), each table
    with its own vtable just before it. Field values: int (int32), str, numpy array (a scalar vector, 8-aligned),
    or a list of field lists (a vector of tables)."""

    def __init__(self):
        self.buf = bytearray()

    def _align(self, n, shift=0):
        while (len(self.buf) + shift) % n:
            self.buf.append(0)

    def finish(self, fields, identifier=b"\0\0\0\0"):
        self.buf = bytearray(8)
        self.buf[4:8] = identifier
        struct.pack_into("<I", self.buf, 0, self._table(fields))
        return bytes(self.buf)

    def _table(self, fields):
        slots = 4 + 4 * len(fields)
        vtable = struct.pack(f"<{2 + len(fields)}H", 4 + 2 * len(fields), slots,
                             *[4 + 4 * i if f is not None else 0 for i, f in enumerate(fields)])
        self._align(4, len(vtable))
        self.buf += vtable
        pos = len(self.buf)
        self.buf += struct.pack("<i", len(vtable)) + bytes(slots - 4)
        for i, f in enumerate(fields):
            at = pos + 4 + 4 * i
            if isinstance(f, (int, np.integer)):
                struct.pack_into("<i", self.buf, at, int(f))
            elif f is not None:
                struct.pack_into("<I", self.buf, at, self._object(f) - at)
        return pos

    def _object(self, value):
        if isinstance(value, str):
            data = value.encode("utf-8")
            self._align(4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(data)) + data + b"\0"
            return pos
        if isinstance(value, np.ndarray):
            self._align(8, 4)
            pos = len(self.buf)
            data = np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes()
            self.buf += struct.pack("<I", value.size) + data
            return pos
        self._align(4)
        pos = len(self.buf)  # a vector of tables: offsets first, the tables after
        self.buf += struct.pack("<I", len(value)) + bytes(4 * len(value))
        for k, fields in enumerate(value):
            at = pos + 4 + 4 * k
            struct.pack_into("<I", self.buf, at, self._table(fields) - at)
        return pos
