"""Protocol-buffer wire format: a schema-driven decoder and encoder in pure Python (no compiled protobuf).

A schema is a dict {field_number: Field}. Decoding yields `Message` objects whose attributes carry the field names;
bytes fields decode to memoryview slices of the input so large tensors are never copied.
"""
import struct

import numpy as np

from ..errors import InvalidProtobuf

VARINT, I64, LEN, I32 = 0, 1, 2, 5

# field kinds
INT, UINT, FLOAT, DOUBLE, STRING, BYTES, MESSAGE = "int", "uint", "float", "double", "string", "bytes", "message"
_SCALAR_DEFAULT = {INT: 0, UINT: 0, FLOAT: 0.0, DOUBLE: 0.0, STRING: "", BYTES: b""}
_NUMERIC = (INT, UINT, FLOAT, DOUBLE)


_WIRE = {INT: VARINT, UINT: VARINT, FLOAT: I32, DOUBLE: I64, STRING: LEN, BYTES: LEN, MESSAGE: LEN}


class Field:
    __slots__ = ("number", "name", "kind", "repeated", "message", "presence", "oneof", "wire")

    def __init__(self, number, name, kind, repeated=False, message=None, presence=False, oneof=None):
        self.number, self.name, self.kind, self.repeated = number, name, kind, repeated
        self.message = message  # message class name for MESSAGE fields, resolved lazily
        self.presence = presence  # oneof member: None when absent, written whenever set
        self.oneof = oneof  # the oneof's name: setting this field clears the group's other members
        self.wire = _WIRE[kind]  # the wire type a value arrives with (repeated numbers may also come packed)


class Message:
    """Base of generated message classes; fields become attributes with proto defaults."""

    FIELDS = {}  # number -> Field (set per subclass)
    _BY_NAME = {}
    _ONEOF = {}  # field name -> the other members of its oneof

    def __init__(self, **kwargs):  # (defaults are class attributes: see message_class)
        for k, v in kwargs.items():
            if k not in self._BY_NAME:
                raise TypeError(f"{type(self).__name__} has no field {k!r}")
            setattr(self, k, list(v) if self._BY_NAME[k].repeated else v)

    def __repr__(self):
        parts = []
        for f in self.FIELDS.values():
            v = getattr(self, f.name)
            if v in (None, [], 0, 0.0, "", b"") and not f.presence:
                continue
            if v is None:
                continue
            if isinstance(v, memoryview):
                v = f"<{len(v)} bytes>"
            parts.append(f"{f.name}={v!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __eq__(self, other):
        return type(self) is type(other) and all(
            _eq(getattr(self, f.name), getattr(other, f.name)) for f in self.FIELDS.values())

    # protobuf's message methods (their names, so code written for the `onnx` package runs on these classes)
    def SerializeToString(self):  # noqa: N802
        return encode(self)

    def ByteSize(self):  # noqa: N802
        return len(encode(self))

    def ParseFromString(self, data):  # noqa: N802
        """Replaces the content with `data` decoded (InvalidProtobuf when malformed); returns its length."""
        self.Clear()
        self.MergeFromString(data)
        return len(data)

    def MergeFromString(self, data):  # noqa: N802
        decode(type(self), data, into=self, depth=0)
        return len(data)

    def Clear(self):  # noqa: N802
        vars(self).clear()  # (every field back to its class default)

    def ClearField(self, name):  # noqa: N802
        f = self._field(name)
        setattr(self, name, [] if f.repeated else None if f.kind == MESSAGE or f.presence else
                _SCALAR_DEFAULT[f.kind])

    def HasField(self, name):  # noqa: N802
        """A singular field set (messages and oneof members: present; other scalars: not their default, as this
        codec keeps no presence for them); a oneof's name: one of its members set. ValueError for a repeated
        field, as protobuf."""
        f = self._BY_NAME.get(name)
        if f is None:
            members = [g for g in self.FIELDS.values() if g.oneof == name]
            if not members:
                raise ValueError(f'Protocol message {type(self).__name__} has no field "{name}"')
            return any(getattr(self, g.name) is not None for g in members)
        if f.repeated:
            raise ValueError(f'Protocol message has no singular "{name}" field.')
        v = getattr(self, name)
        return v is not None if f.kind == MESSAGE or f.presence else _eq(v, _SCALAR_DEFAULT[f.kind]) is False

    def WhichOneof(self, group):  # noqa: N802
        for f in self.FIELDS.values():
            if f.oneof == group and getattr(self, f.name) is not None:
                return f.name
        return None

    def CopyFrom(self, other):  # noqa: N802
        """Makes this message a deep copy of `other` (of the same class; bytes values are shared, never mutated)."""
        if type(other) is not type(self):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: expected {type(self).__name__} "
                            f"got {type(other).__name__}.")
        if other is not self:
            for f in self.FIELDS.values():
                setattr(self, f.name, _copy_value(f, getattr(other, f.name)))

    def __deepcopy__(self, memo):
        out = type(self).__new__(type(self))
        out.CopyFrom(self)
        return out

    def _field(self, name):
        f = self._BY_NAME.get(name)
        if f is None:
            raise ValueError(f'Protocol message {type(self).__name__} has no field "{name}"')
        return f


def _copy_value(f, v):
    if f.kind != MESSAGE:
        return list(v) if f.repeated else v
    if f.repeated:
        return [m.__deepcopy__(None) for m in v]
    return None if v is None else v.__deepcopy__(None)


def _eq(a, b):
    if isinstance(a, memoryview) or isinstance(b, memoryview):
        return bytes(a) == bytes(b)
    return a == b


CLASSES = {}


class _RepeatedDefault:
    """A repeated field's default: the message's own empty list, stored on it when first read."""

    def __init__(self, name):
        self.name = name

    def __get__(self, msg, cls):
        if msg is None:
            return self
        v = msg.__dict__[self.name] = []
        return v


def message_class(name, fields):
    """Create and register a Message subclass from a list of Field."""
    by_num = {f.number: f for f in fields}
    oneof = {f.name: tuple(g.name for g in fields if g.oneof == f.oneof and g is not f) for f in fields if f.oneof}
    # a field's default is a class attribute, shadowed once the field is set: a message decodes without setting its
    # absent fields (~5,800 messages in a 2 MB model); a repeated field's list is made on first use
    defaults = {f.name: _RepeatedDefault(f.name) if f.repeated else
                None if f.kind == MESSAGE or f.presence else _SCALAR_DEFAULT[f.kind] for f in fields}
    cls = type(name, (Message,), {"FIELDS": by_num, "_BY_NAME": {f.name: f for f in fields}, "_ONEOF": oneof,
                                  **defaults})
    CLASSES[name] = cls
    return cls


def _read_varint(buf, pos):
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return b, pos
    result = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift > 63:  # ten bytes at most
            raise InvalidProtobuf("Failed to load model: malformed varint in protobuf")


def _signed64(v):
    return v - (1 << 64) if v >= (1 << 63) else v


def _packed_varints(data, signed):
    """Decode a packed run of varints with numpy (vectorised: ends are bytes with the high bit clear)."""
    a = np.frombuffer(data, dtype=np.uint8)
    if a.size == 0:
        return []
    ends = np.flatnonzero(a < 0x80)
    if ends.size == 0 or ends[-1] != a.size - 1:
        raise InvalidProtobuf("Failed to load model: truncated packed varint field")
    if ends.size == a.size:  # all one-byte values
        vals = a.astype(np.uint64)
    else:
        starts = np.concatenate(([0], ends[:-1] + 1))
        lens = ends - starts + 1
        if lens.max() > 10:
            raise InvalidProtobuf("Failed to load model: malformed varint in protobuf")
        vals = np.zeros(ends.size, dtype=np.uint64)
        for k in range(int(lens.max())):
            m = lens > k
            vals[m] |= (a[starts[m] + k].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * k)
    return (vals.view(np.int64) if signed else vals).tolist()


def _wrong_wire(cls, f, wt):
    return InvalidProtobuf(f"Failed to load model: field {cls.__name__}.{f.name} arrives with wire type {wt}, "
                           f"expected {f.wire}")


def _skip(buf, pos, end, wt, num, cls):
    """The position after an unknown field's value (groups skipped to their end tag)."""
    if wt == VARINT:
        return _read_varint(buf, pos)[1]
    if wt == I64 or wt == I32:
        pos += 8 if wt == I64 else 4
    elif wt == LEN:
        n, pos = _read_varint(buf, pos)
        pos += n
    elif wt == 3:  # a group: fields up to the END_GROUP tag of the same number
        while True:
            if pos >= end:
                raise InvalidProtobuf(f"Failed to load model: unterminated group {num} in {cls.__name__}")
            key, pos = _read_varint(buf, pos)
            if key & 7 == 4:
                if key >> 3 != num:
                    break  # mismatched end: reported below
                return pos
            pos = _skip(buf, pos, end, key & 7, key >> 3, cls)
    if wt not in (VARINT, I64, I32, LEN) or pos > end:
        raise InvalidProtobuf(f"Failed to load model: invalid or truncated field {num} (wire type {wt}) in "
                              f"{cls.__name__}")
    return pos


def has_field(buf, number):
    """Whether a message's bytes carry field `number` at their top level (presence, which decoding keeps only for
    oneof members: onnxruntime refuses a ModelProto without ir_version, not one whose ir_version is 0)."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _read_varint(buf, pos)
        if key >> 3 == number:
            return True
        pos = _skip(buf, pos, end, key & 7, key >> 3, Message)
    return False


MAX_DEPTH = 100  # protobuf's default recursion limit (C++ and upb): deeper messages are refused as there


def decode(cls, buf, pos=0, end=None, mv=None, into=None, depth=None):
    """Decode bytes `buf[pos:end]` as message class `cls` (into the message `into`, merged as protobuf merges: a
    singular field present again replaces its value, or merges into it for a message; repeated fields append;
    setting a oneof member clears the others). A known field with the wrong wire type raises InvalidProtobuf, as do
    messages nested deeper than MAX_DEPTH when `depth` (this message's) is given."""
    if depth is not None and depth > MAX_DEPTH:
        raise InvalidProtobuf(f"Failed to load model: messages nested deeper than protobuf's limit of {MAX_DEPTH}")
    if mv is None:
        if not isinstance(buf, bytes):
            buf = bytes(buf)
        mv = memoryview(buf)
    if end is None:
        end = len(buf)
    msg = cls.__new__(cls) if into is None else into  # (no kwargs to apply: __init__ skipped)
    fields = cls.FIELDS
    while pos < end:
        key, pos = _read_varint(buf, pos)
        num, wt = key >> 3, key & 7
        f = fields.get(num)
        if f is None:
            if num == 0:
                raise InvalidProtobuf(f"Failed to load model: field number 0 in {cls.__name__}")
            pos = _skip(buf, pos, end, wt, num, cls)
            continue
        kind = f.kind
        if wt != f.wire:
            if wt != LEN or not f.repeated or kind not in _NUMERIC:
                raise _wrong_wire(cls, f, wt)
            n, pos = _read_varint(buf, pos)  # a packed run of numbers
            if pos + n > end:
                raise InvalidProtobuf(f"Failed to load model: truncated field {f.name} in {cls.__name__}")
            chunk, pos = mv[pos:pos + n], pos + n
            if kind == FLOAT:
                getattr(msg, f.name).extend(np.frombuffer(chunk, "<f4").tolist())
            elif kind == DOUBLE:
                getattr(msg, f.name).extend(np.frombuffer(chunk, "<f8").tolist())
            else:
                getattr(msg, f.name).extend(_packed_varints(chunk, kind == INT))
            continue
        if wt == VARINT:
            v, pos = _read_varint(buf, pos)
            if kind == INT:
                v = _signed64(v)
        elif wt == LEN:
            n, pos = _read_varint(buf, pos)
            if pos + n > end:
                raise InvalidProtobuf(f"Failed to load model: truncated field {f.name} in {cls.__name__}")
            start, pos = pos, pos + n
            if kind == MESSAGE:
                old = None if f.repeated else getattr(msg, f.name)
                v = decode(CLASSES[f.message], buf, start, pos, mv, old, None if depth is None else depth + 1)
            elif kind == STRING:
                try:
                    v = str(mv[start:pos], "utf-8")
                except UnicodeDecodeError:
                    raise InvalidProtobuf(f"Failed to load model: invalid UTF-8 in {cls.__name__}.{f.name}") from None
            else:
                v = mv[start:pos]
        elif wt == I32:
            if pos + 4 > end:
                raise InvalidProtobuf(f"Failed to load model: truncated {cls.__name__}")
            v = struct.unpack_from("<f", buf, pos)[0]
            pos += 4
        else:
            if pos + 8 > end:
                raise InvalidProtobuf(f"Failed to load model: truncated {cls.__name__}")
            v = struct.unpack_from("<d", buf, pos)[0]
            pos += 8
        if f.repeated:
            getattr(msg, f.name).append(v)
            continue
        if f.oneof is not None:
            for other in cls._ONEOF[f.name]:
                setattr(msg, other, None)
        setattr(msg, f.name, v)
    if pos != end:
        raise InvalidProtobuf(f"Failed to load model: truncated {cls.__name__}")
    return msg


def _varint_bytes(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _encode_packed(kind, values):
    if kind == FLOAT:
        return np.asarray(values, dtype="<f4").tobytes()
    if kind == DOUBLE:
        return np.asarray(values, dtype="<f8").tobytes()
    return b"".join(_varint_bytes(int(v)) for v in values)


def encode(msg):
    """Serialize a Message to protobuf bytes (fields in number order; packed numeric repeats)."""
    out = []
    for num in sorted(msg.FIELDS):
        f = msg.FIELDS[num]
        v = getattr(msg, f.name)
        if f.repeated:
            if not v:
                continue
            if f.kind in _NUMERIC:
                data = _encode_packed(f.kind, v)
                out += [_varint_bytes(num << 3 | LEN), _varint_bytes(len(data)), data]
            else:
                for item in v:
                    out.append(_encode_one(f, item))
        elif v is None:
            continue
        elif f.kind == MESSAGE or f.presence or v != _SCALAR_DEFAULT[f.kind]:
            out.append(_encode_one(f, v))
    return b"".join(out)


def _encode_one(f, v):
    num, kind = f.number, f.kind
    if kind in (INT, UINT):
        return _varint_bytes(num << 3 | VARINT) + _varint_bytes(int(v))
    if kind == FLOAT:
        return _varint_bytes(num << 3 | I32) + struct.pack("<f", v)
    if kind == DOUBLE:
        return _varint_bytes(num << 3 | I64) + struct.pack("<d", v)
    if kind == STRING:
        data = v.encode("utf-8") if isinstance(v, str) else bytes(v)
    elif kind == BYTES:
        data = v.encode("utf-8") if isinstance(v, str) else bytes(v)
    else:
        data = encode(v)
    return _varint_bytes(num << 3 | LEN) + _varint_bytes(len(data)) + data
