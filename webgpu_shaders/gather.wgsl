// Gather / GatherElements: thread i is output element i; the index it reads (negative ones count from the end) picks
// the input element. An index out of range sets the device's error flag (reported at the next readback) and reads
// element 0, never memory outside the input. Meta words: [n, axis dim, inner, index count per outer, ELEMENTS
// (0: Gather, 1: GatherElements), rank, out dims(RANK), data strides(RANK)].
${ENABLE}
@group(0) @binding(0) var<storage, read> src: array<${ELEM}>;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read_write> dst: array<${ELEM}>;
@group(0) @binding(3) var<storage, read_write> err: array<atomic<u32>>;
struct Meta { v: array<vec4<u32>, ${META_VEC4}> };
@group(0) @binding(4) var<uniform> params: Meta;
fn m(i: u32) -> u32 { return params.v[i / 4u][i % 4u]; }

fn index_at(j: u32, dim: u32) -> u32 {
  var k = idx[j * ${IDX_WORDS}u];
  if (k < 0) { k += i32(dim); }
  if (k < 0 || k >= i32(dim)) {
    atomicMax(&err[0], ${ERR_CODE}u);
    return 0u;
  }
  return u32(k);
}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = ${LINEAR};
  if (i >= m(0u)) { return; }
  let dim = m(1u);
  ${BODY}
}
