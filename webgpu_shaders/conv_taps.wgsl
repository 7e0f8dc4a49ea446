// Convolution taps and epilogue, shared by the implicit GEMM (matmul.wgsl) and the direct kernel (conv.wgsl) of
// Conv / FusedConv / ConvTranspose. Geometry has 3 spatial dims (1-D and 2-D get leading unit dims). x_index: the
// element of x that kernel tap t reads for output position p of input channel ch in image n, or -1 where it reads
// padding (transposed: also where no input lands on the tap). Meta words from G: in dims (3), kernel (3), strides
// (3), dilations (3), begin pads (3), out dims (3), C, C/group, M/group, M, group, activation p0, p1, taps
// (prod kernel), out positions (prod out).
const G: u32 = ${G}u;

fn tap_axis(o: u32, t: u32, a: u32) -> i32 {
  let size = i32(m(G + a));
  let stride = i32(m(G + 6u + a));
  let dil = i32(m(G + 9u + a));
  let pad = i32(m(G + 12u + a));
  ${AXIS}
}

fn x_index(n: u32, ch: u32, t: u32, p: u32) -> i32 {
  let k1 = m(G + 4u);
  let k2 = m(G + 5u);
  let o1 = m(G + 16u);
  let o2 = m(G + 17u);
  let i0 = tap_axis(p / (o1 * o2), t / (k1 * k2), 0u);
  let i1 = tap_axis((p / o2) % o1, (t / k2) % k1, 1u);
  let i2 = tap_axis(p % o2, t % k2, 2u);
  if (i0 < 0 || i1 < 0 || i2 < 0) { return -1; }
  return ((i32(n * m(G + 18u) + ch) * i32(m(G)) + i0) * i32(m(G + 1u)) + i1) * i32(m(G + 2u)) + i2;
}

fn x_tap(n: u32, ch: u32, t: u32, p: u32) -> f32 {
  let at = x_index(n, ch, t, p);
  if (at < 0) { return 0.0; }
  return f32(ld_x(u32(at)));
}

${ACT}

// y at output channel grp · M/group + row, position col of image img: act(v + bias + z)
fn epilogue(img: u32, grp: u32, row: u32, col: u32, v: f32) {
  let ch = grp * m(G + 20u) + row;
  let at = (img * m(G + 21u) + ch) * m(G + 26u) + col;
  var s = v;
  ${ADD}
  st_y(at, ${OUT}(act(s, mf(G + 23u), mf(G + 24u))));
}
