// Winograd F(2×2, 3×3) stages for 3×3 stride-1 convolutions (ops_conv.py): the weights' and the input's 4×4
// tiles transformed into 16 planes (U = G·g·Gᵀ, V = Bᵀ·d·B), and the output transform (Y = Aᵀ·M·A of the 16
// planes the GEMMs made) with bias, Z and the activation. Thread i is item i of its stage (BODY), unrolled.
// Meta words: [items, C, M, H, W, OH, OW, tile rows, tile columns, top pad, left pad, tiles, p0, p1].
${INTERFACE}
${COMMON}
${ACT}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = ${LINEAR};
  if (i >= m(0u)) { return; }
  ${BODY}
}
