// Element-wise kernels: one output element per thread, each input broadcast to the output through its own strides
// (0 along broadcast dims). Meta words: [n, p0, p1, out dims (RANK), then RANK strides per input].
${INTERFACE}
${COMMON}
const RANK: u32 = ${RANK}u;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = ${LINEAR};
  if (i >= m(0u)) { return; }
  let p0 = mf(1u);
  let p1 = mf(2u);
  ${OFFSETS}
  ${BODY}
}
