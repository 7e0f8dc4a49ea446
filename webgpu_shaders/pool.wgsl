// Pooling: MaxPool (and its Indices), AveragePool, LpPool, and the Global* pools as one window over the whole input.
// Thread i is output element nc · positions + p; it visits its window's taps (1-3 spatial dims as 3: leading unit
// dims) and skips those outside the input (padding, or past it where ceil_mode makes the last window overrun).
// Meta words: [outputs, in dims (3), kernel (3), strides (3), dilations (3), begin pads (3), end pads (3), out dims
// (3), storage_order, count_include_pad, p].
${INTERFACE}
${COMMON}
fn lowest() -> f32 { var bits = 0xff800000u; return bitcast<f32>(bits); }  // -inf (a var: no constant infinity)

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = ${LINEAR};
  if (i >= m(0u)) { return; }
  let o1 = m(20u);
  let o2 = m(21u);
  let positions = m(19u) * o1 * o2;
  let p = i % positions;
  let nc = i / positions;
  let size = vec3<i32>(i32(m(1u)), i32(m(2u)), i32(m(3u)));
  let stride = vec3<i32>(i32(m(7u)), i32(m(8u)), i32(m(9u)));
  let dil = vec3<i32>(i32(m(10u)), i32(m(11u)), i32(m(12u)));
  let pad_begin = vec3<i32>(i32(m(13u)), i32(m(14u)), i32(m(15u)));
  let pad_end = vec3<i32>(i32(m(16u)), i32(m(17u)), i32(m(18u)));
  let start = vec3<i32>(i32(p / (o1 * o2)), i32((p / o2) % o1), i32(p % o2)) * stride - pad_begin;
  let base = nc * u32(size.x * size.y * size.z);
  var acc = ${INIT};
  var count = 0u;
  var best = 0u;
  var t = 0u;
  for (var t0 = 0u; t0 < m(4u); t0++) {
    for (var t1 = 0u; t1 < m(5u); t1++) {
      for (var t2 = 0u; t2 < m(6u); t2++) {
        let at = start + vec3<i32>(i32(t0), i32(t1), i32(t2)) * dil;
        let inside = all(at >= vec3<i32>(0)) && all(at < size);
        let x_at = base + u32((at.x * size.y + at.y) * size.z + at.z);
        ${TAP}
        t++;
      }
    }
  }
  ${FINISH}
}
