// Pad: the body of an elementwise.wgsl kernel over the output (thread i: element i). Per dim, t is the coordinate
// in the input after negative pads crop it (length len); one outside [0, len) is mapped by the mode (MODE) or,
// for constant, marks the element as padding. Meta words from 3: out dims, cropped lengths, pads before, crop
// offsets, input strides (RANK each), then the constant's words.
var rem = i;
  var src = 0u;
  var inside = true;
  for (var d = 0u; d < RANK; d++) {
    let e = RANK - 1u - d;
    let c = i32(rem % m(3u + e));
    rem = rem / m(3u + e);
    let len = mi(3u + RANK + e);
    var t = c - mi(3u + 2u * RANK + e);
    if (t < 0 || t >= len) { ${MODE} }
    src += u32(t + mi(3u + 3u * RANK + e)) * m(3u + 4u * RANK + e);
  }
  if (inside) { ${COPY} } else { ${FILL} }
