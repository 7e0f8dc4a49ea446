// Data movement as one strided copy: thread i is element i of the iteration shape; it reads the input at
// ibase + sum(((idx_d % imod_d) * istride_d)) and writes the output at obase + sum(idx_d * ostride_d). Transpose,
// Slice (negative strides included), Expand (0 strides), Tile (the modulus), Concat / Split (a region each) and
// If / Loop / Scan's take are all this. Meta words: [n, ibase, obase, dims(RANK), istrides, ostrides, imods].
${ENABLE}
@group(0) @binding(0) var<storage, read> src: array<${ELEM}>;
@group(0) @binding(1) var<storage, read_write> dst: array<${ELEM}>;
struct Meta { v: array<vec4<u32>, ${META_VEC4}> };
@group(0) @binding(2) var<uniform> params: Meta;
fn m(i: u32) -> u32 { return params.v[i / 4u][i % 4u]; }
const RANK: u32 = ${RANK}u;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = ${LINEAR};
  if (i >= m(0u)) { return; }
  var rem = i;
  var src_at = bitcast<i32>(m(1u));
  var dst_at = m(2u);
  for (var d = 0u; d < RANK; d++) {
    let e = RANK - 1u - d;
    let c = rem % m(3u + e);
    rem = rem / m(3u + e);
    src_at += i32(c % m(3u + 3u * RANK + e)) * bitcast<i32>(m(3u + RANK + e));
    dst_at += c * m(3u + 2u * RANK + e);
  }
  dst[dst_at] = src[u32(src_at)];
}
