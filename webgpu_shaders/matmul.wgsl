// Tiled GEMM, Y = A·B per batch entry (MatMul / Gemm / the implicit GEMM of convolutions). One workgroup computes a
// BM×BN tile of one batch entry: it stages BK-deep slices of A and B in workgroup memory, and each of its WORKGROUP
// threads accumulates a TM×TN block in registers (f32, whatever the storage type; unrolled into scalars: Mesa's
// lavapipe runs private arrays and short loops several times slower). The family supplies PROLOGUE
// (per-batch setup), LOAD_A / LOAD_B (an element of A at (row, k) / of B at (k, col), only called inside the
// matrix) and STORE (writes `v`, the sum at (row, col), to the output).
// Meta words: [workgroups, rows, cols, depth, then the family's words].
${INTERFACE}
${COMMON}
${HELPERS}
const BM: u32 = ${BM}u;
const BN: u32 = ${BN}u;
const BK: u32 = ${BK}u;
const TM: u32 = ${TM}u;
const TN: u32 = ${TN}u;
var<workgroup> tile_a: array<f32, ${A_TILE}>;  // [k][row]
var<workgroup> tile_b: array<f32, ${B_TILE}>;  // [k][col]

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let group = wid.x + wid.y * ${MAX_GROUPS}u;
  if (group >= m(0u)) { return; }  // (uniform: whole workgroups past the grid leave together)
  let rows = m(1u);
  let cols = m(2u);
  let depth = m(3u);
  let tiles_n = (cols + BN - 1u) / BN;
  let per_batch = ((rows + BM - 1u) / BM) * tiles_n;
  let batch = group / per_batch;
  let row0 = ((group % per_batch) / tiles_n) * BM;
  let col0 = ((group % per_batch) % tiles_n) * BN;
  ${PROLOGUE}
  let tr = lid / (BN / TN);  // this thread's rows: tr + i · BM / TM, its columns: tc + j · BN / TN
  let tc = lid % (BN / TN);
  ${ACC}
  for (var k0 = 0u; k0 < depth; k0 += BK) {
    for (var e = lid; e < BM * BK; e += ${WORKGROUP}u) {
      let row = row0 + e / BK;
      let k = k0 + e % BK;
      var v = 0.0;
      if (row < rows && k < depth) { v = ${LOAD_A}; }
      tile_a[(e % BK) * BM + e / BK] = v;
    }
    for (var e = lid; e < BK * BN; e += ${WORKGROUP}u) {
      let k = k0 + e / BN;
      let col = col0 + e % BN;
      var v = 0.0;
      if (col < cols && k < depth) { v = ${LOAD_B}; }
      tile_b[e] = v;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let at = kk * BM + tr;
      let bt = kk * BN + tc;
      ${PRODUCT}
    }
    workgroupBarrier();
  }
  ${STORES}
}
