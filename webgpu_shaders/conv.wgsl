// Direct convolution (Conv / ConvTranspose with few output channels per group, such as depthwise ones, where a GEMM
// tile would be mostly empty): thread i is output element (img · M + ch) · positions + col; it sums over its group's
// input channels and the kernel taps (conv_taps.wgsl). Meta words: [outputs, -, -, -, the geometry from G].
${INTERFACE}
${COMMON}
${TAPS}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = ${LINEAR};
  if (i >= m(0u)) { return; }
  let cg = m(G + 19u);
  let mg = m(G + 20u);
  let taps = m(G + 25u);
  let cols = m(G + 26u);
  let col = i % cols;
  let ch = (i / cols) % m(G + 21u);
  let img = i / cols / m(G + 21u);
  let grp = ch / mg;
  let row = ch % mg;
  var v = 0.0;
  for (var c = 0u; c < cg; c++) {
    for (var t = 0u; t < taps; t++) {
      let at = x_index(img, grp * cg + c, t, col);
      if (at >= 0) { v += f32(ld_x(u32(at))) * f32(ld_w(${W_INDEX})); }
    }
  }
  epilogue(img, grp, row, col, v);
}
