// Resize along one axis: the body of an elementwise.wgsl kernel over the output (thread i: element i, o its index
// along the axis). Table t (u32): k source indices per output index, then their f32 weights, then the
// extrapolation flags (tf_crop_and_resize: the value p0). Meta words from 3: input length, output length, the
// elements after the axis, k.
let n_in = m(3u);
  let n_out = m(4u);
  let inner = m(5u);
  let k = m(6u);
  let o = (i / inner) % n_out;
  var acc = 0.0;
  if (ld_t(2u * n_out * k + o) != 0u) {
    acc = p0;
  } else {
    let base = (i / (inner * n_out)) * n_in * inner + i % inner;
    for (var q = 0u; q < k; q++) {
      acc += bitcast<f32>(ld_t(n_out * k + o * k + q)) * f32(ld_x(base + ld_t(o * k + q) * inner));
    }
  }
  ${STORE}
