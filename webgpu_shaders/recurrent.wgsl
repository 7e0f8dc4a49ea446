// RNN / LSTM / GRU, one time step per dispatch (the host loops over time; the states stay on the device): thread i is
// hidden unit j of batch row b in direction d. Its step reads input row src (the time its direction and sequence
// length give), the previous state, and writes the next state and Y[src, d, b, j]; past a row's length the state is
// kept (zero at the end for a zero-length row) and Y stays zero. Meta words: [threads, t, T, B, H, I, reverse (dir 0,
// dir 1), clip, has clip, directions, input_forget, then each activation's (alpha, beta) by direction and position].
${INTERFACE}
${COMMON}
const G: u32 = ${GATES}u;  // gates
const NF: u32 = ${FUNCTIONS}u;  // activation functions per direction

fn clipped(v: f32) -> f32 {
  let c = mf(8u);
  return select(v, clamp(v, -c, c), m(9u) != 0u);
}

// input projection and recurrent product of gate row `row` (a row of W and R) for batch row b in direction d
fn in_dot(d: u32, b: u32, src: u32, row: u32) -> f32 {
  let n = m(5u);
  var s = 0.0;
  for (var k = 0u; k < n; k++) {
    s += f32(ld_x((src * m(3u) + b) * n + k)) * f32(ld_w((d * G * m(4u) + row) * n + k));
  }
  return s;
}

fn rec_dot(d: u32, b: u32, row: u32) -> f32 {
  let n = m(4u);
  var s = 0.0;
  for (var k = 0u; k < n; k++) {
    s += ${STATE}((d * m(3u) + b) * n + k) * f32(ld_r((d * G * n + row) * n + k));
  }
  return s;
}

fn act(d: u32, k: u32, a: f32) -> f32 {
  let p0 = mf(12u + 2u * (d * NF + k));
  let p1 = mf(13u + 2u * (d * NF + k));
  switch (d * NF + k) {
    ${ACTIVATIONS}
    default: { return a; }
  }
}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = ${LINEAR};
  if (i >= m(0u)) { return; }
  let t = m(1u);
  let hidden = m(4u);
  let j = i % hidden;
  let b = (i / hidden) % m(3u);
  let d = i / (hidden * m(3u));
  let len = u32(ld_lens(b));
  let valid = t < len;
  let src = select(t, select(t, len - 1u - t, valid), m(6u + d) != 0u);
  let at = (d * m(3u) + b) * hidden + j;
  let bias = d * (${BIAS_WIDTH}) * hidden;  // this direction's biases (and an LSTM's peepholes after them)
  let y_at = ((src * m(10u) + d) * m(3u) + b) * hidden + j;
  let last_of_empty = t + 1u == m(2u) && len == 0u;
  ${BODY}
}
