"""ImageDecoder with pure-Python codecs: PNG (zlib), BMP, PNM and uncompressed/PackBits TIFF; JPEG, JPEG 2000
and WebP are refused (they need a real codec library, which onnxide does not ship)."""
import struct
import zlib

import numpy as np

from ..dtypes import UINT8
from ..errors import Fail, InvalidArgument
from .inference import rule
from .registry import op


def _to_rgb(img):
    """uint8 HxWx{1,2,3,4} -> HxWx3 (alpha dropped, gray replicated)."""
    c = img.shape[2]
    if c in (1, 2):
        return np.repeat(img[:, :, :1], 3, axis=2)
    return img[:, :, :3]


def _gray(rgb):
    """ITU-R 601 luma with the fixed-point rounding image libraries use."""
    r, g, b = (rgb[:, :, i].astype(np.uint32) for i in range(3))
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(np.uint8)[:, :, None]


# ------------------------------------------------------------------------------------------- PNG
def _unfilter(raw, h, stride, bpp):
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    pos = 0
    for y in range(h):
        ft = raw[pos]
        line = np.frombuffer(raw, np.uint8, stride, pos + 1).astype(np.int32)
        pos += stride + 1
        if ft == 0:
            cur = line
        elif ft == 1:  # Sub: a running sum (mod 256) along each byte lane
            cur = line.copy()
            for lane in range(min(bpp, stride)):
                cur[lane::bpp] = np.cumsum(line[lane::bpp]) & 0xFF
        elif ft == 2:
            cur = (line + prev) & 0xFF
        elif ft == 3:
            cur = line.copy()
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                cur[i] = (cur[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ft == 4:
            cur = line.copy()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if (pa <= pb and pa <= pc) else (b if pb <= pc else c)
                cur[i] = (cur[i] + pred) & 0xFF
        else:
            raise Fail(f"ImageDecoder: bad PNG filter type {ft}")
        out[y] = cur
        prev = cur
    return out


def _png(data):
    pos, idat, plte = 8, [], None
    ihdr = None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"PLTE":
            plte = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"IEND":
            break
    if ihdr is None:
        raise Fail("ImageDecoder: PNG without IHDR")
    w, h, depth, ctype, _, _, interlace = ihdr
    if interlace:
        raise Fail("ImageDecoder: interlaced PNG is not supported")
    chans = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    bits = depth * chans
    stride = (w * bits + 7) // 8
    raw = zlib.decompress(b"".join(idat))
    rows = _unfilter(raw, h, stride, max(bits // 8, 1))
    if depth == 16:
        px = rows.reshape(h, w * chans, 2)[:, :, 0].reshape(h, w, chans)  # keep the high byte
    elif depth == 8:
        px = rows.reshape(h, w, chans)
    else:
        px = np.unpackbits(rows, axis=1).reshape(h, -1, depth)[:, :w]
        px = (px * (1 << np.arange(depth - 1, -1, -1))).sum(-1).astype(np.uint8)[:, :, None]
        if ctype == 0:
            px = (px.astype(np.uint32) * 255 // ((1 << depth) - 1)).astype(np.uint8)
    if ctype == 3:
        if plte is None:
            raise Fail("ImageDecoder: palette PNG without PLTE")
        px = plte[px[:, :, 0]]
    return px


# ------------------------------------------------------------------------------------------- BMP
def _bmp(data):
    off = struct.unpack("<I", data[10:14])[0]
    hsize = struct.unpack("<I", data[14:18])[0]
    w, h, _, bpp, comp = struct.unpack("<iiHHI", data[18:34])
    if comp not in (0, 3):
        raise Fail("ImageDecoder: compressed BMP is not supported")
    flip = h > 0
    h = abs(h)
    stride = ((w * bpp + 31) // 32) * 4
    rows = np.frombuffer(data, np.uint8, stride * h, off).reshape(h, stride)
    if bpp in (24, 32):
        px = rows[:, : w * (bpp // 8)].reshape(h, w, bpp // 8)[:, :, [2, 1, 0]]
    elif bpp in (1, 4, 8):
        ncol = struct.unpack("<I", data[46:50])[0] or (1 << bpp)
        pal = np.frombuffer(data, np.uint8, 4 * ncol, 14 + hsize).reshape(ncol, 4)[:, [2, 1, 0]]
        idx = np.unpackbits(rows, axis=1).reshape(h, -1, bpp)[:, :w] if bpp < 8 else rows[:, :w, None]
        if bpp < 8:
            idx = (idx * (1 << np.arange(bpp - 1, -1, -1))).sum(-1)[:, :, None]
        px = pal[idx[:, :, 0]]
    else:
        raise Fail(f"ImageDecoder: {bpp}-bit BMP is not supported")
    return px[::-1] if flip else px


# ------------------------------------------------------------------------------------------- PNM
def _pnm(data):
    magic = data[:2]
    tokens, pos = [], 2
    need = 2 if magic in (b"P1", b"P4") else 3
    while len(tokens) < need:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            while data[pos:pos + 1] not in (b"\n", b""):
                pos += 1
            continue
        start = pos
        while not data[pos:pos + 1].isspace():
            pos += 1
        tokens.append(int(data[start:pos]))
    pos += 1
    w, h = tokens[0], tokens[1]
    maxval = tokens[2] if need == 3 else 1
    chans = 3 if magic in (b"P3", b"P6") else 1
    if magic in (b"P5", b"P6"):
        dt = np.uint8 if maxval < 256 else np.dtype(">u2")
        px = np.frombuffer(data, dt, w * h * chans, pos).reshape(h, w, chans).astype(np.uint32)
    elif magic in (b"P2", b"P3"):
        px = np.array(data[pos:].split()[: w * h * chans], np.uint32).reshape(h, w, chans)
    elif magic == b"P4":
        stride = (w + 7) // 8
        bits = np.unpackbits(np.frombuffer(data, np.uint8, stride * h, pos).reshape(h, stride), axis=1)[:, :w]
        return ((1 - bits) * 255).astype(np.uint8)[:, :, None]
    else:
        raise Fail("ImageDecoder: unsupported PNM variant")
    if maxval != 255:
        px = px * 255 // maxval
    return px.astype(np.uint8)


# ------------------------------------------------------------------------------------------- TIFF
def _packbits(buf):
    out, i = bytearray(), 0
    while i < len(buf):
        n = buf[i] - 256 if buf[i] > 127 else buf[i]
        i += 1
        if n >= 0:
            out += buf[i:i + n + 1]
            i += n + 1
        elif n != -128:
            out += bytes([buf[i]]) * (1 - n)
            i += 1
    return bytes(out)


def _tiff(data):
    e = "<" if data[:2] == b"II" else ">"
    ifd = struct.unpack(e + "I", data[4:8])[0]
    n = struct.unpack(e + "H", data[ifd:ifd + 2])[0]
    tags = {}
    sizes = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8}
    codes = {1: "B", 2: "c", 3: "H", 4: "I", 5: "II"}
    for k in range(n):
        tag, typ, cnt, val = struct.unpack(e + "HHI4s", data[ifd + 2 + 12 * k: ifd + 14 + 12 * k])
        size = sizes.get(typ, 1) * cnt
        raw = val if size <= 4 else data[struct.unpack(e + "I", val)[0]:][:size]
        if typ in (3, 4, 1):
            tags[tag] = list(struct.unpack(e + codes[typ] * cnt, raw[:size]))
    w, h = tags[256][0], tags[257][0]
    bps = tags.get(258, [1])[0]
    comp = tags.get(259, [1])[0]
    photo = tags.get(262, [2])[0]
    spp = tags.get(277, [1])[0]
    if bps != 8 or comp not in (1, 32773) or tags.get(284, [1])[0] != 1:
        raise Fail("ImageDecoder: only 8-bit chunky uncompressed/PackBits TIFF is supported")
    strips = b"".join(_packbits(data[o:o + c]) if comp == 32773 else data[o:o + c]
                      for o, c in zip(tags[273], tags[279]))
    px = np.frombuffer(strips, np.uint8, w * h * spp).reshape(h, w, spp)
    if photo == 0:
        px = 255 - px
    return px


def _decode(data):
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return _png(data)
    if data[:2] == b"BM":
        return _bmp(data)
    if data[:1] == b"P" and data[1:2] in b"123456":
        return _pnm(data)
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return _tiff(data)
    if data[:2] == b"\xff\xd8":
        raise Fail("ImageDecoder: JPEG decoding is not supported by onnxide's pure-Python decoders")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        raise Fail("ImageDecoder: WebP decoding is not supported by onnxide's pure-Python decoders")
    if data[4:8] == b"jP  " or data[:4] == b"\xff\x4f\xff\x51":
        raise Fail("ImageDecoder: JPEG 2000 decoding is not supported by onnxide's pure-Python decoders")
    raise Fail("ImageDecoder: unrecognised image format")


@op("ImageDecoder", since=20, host_inputs=(0,))
def image_decoder(encoded_stream, *, pixel_format="RGB"):
    if pixel_format not in ("RGB", "BGR", "Grayscale"):
        raise InvalidArgument(f"ImageDecoder: unsupported pixel_format '{pixel_format}'")
    data = np.asarray(encoded_stream, np.uint8).tobytes()
    try:
        px = _decode(data)
    except (struct.error, KeyError, IndexError, ValueError, zlib.error) as e:
        raise Fail(f"ImageDecoder: corrupt image data ({e})") from None
    if px.ndim == 2:
        px = px[:, :, None]
    rgb = _to_rgb(np.ascontiguousarray(px, np.uint8))
    if pixel_format == "RGB":
        return np.ascontiguousarray(rgb)
    if pixel_format == "BGR":
        return np.ascontiguousarray(rgb[:, :, ::-1])
    if px.shape[2] in (1, 2):
        return np.ascontiguousarray(px[:, :, :1])
    return _gray(rgb)


@rule("ImageDecoder")
def _image_decoder_rule(f):
    """uint8 [height, width, channels] (3, or 1 for Grayscale)."""
    return [(UINT8, [None, None, 1 if f.attr("pixel_format", "RGB") == "Grayscale" else 3])]
