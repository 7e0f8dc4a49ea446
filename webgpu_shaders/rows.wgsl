// Row kernels (reductions, ArgMax / ArgMin, softmax, normalisations, CumSum): one workgroup of WG threads per row.
// A row is the set of elements one output (or one normalisation) reads: the kept dims pick its first element
// (row_base), the reduced dims its elements j = 0 .. n-1 in C order (at). Threads stride over j, then combine
// their partial results through shared-memory trees (wg_*, called in uniform control flow).
// Meta words: [rows, n, kept dims (KEPT), kept strides, reduced dims (RED), reduced strides, parameters (p / pu)].
${INTERFACE}
${COMMON}
const WG: u32 = ${WG}u;
const KEPT: u32 = ${KEPT}u;
const RED: u32 = ${RED}u;
const PB: u32 = ${PB}u;
const NONE: u32 = 0xffffffffu;
var<workgroup> sh: array<f32, ${WG}>;
var<workgroup> shi: array<u32, ${WG}>;

fn p(k: u32) -> f32 { return mf(PB + k); }
fn pu(k: u32) -> u32 { return m(PB + k); }
fn finite_or_zero(x: f32) -> f32 { return select(x, 0.0, is_nan(x) || is_inf(x)); }
fn log_z(x: f32) -> f32 {  // log with the IEEE results WGSL leaves open: -inf at 0, NaN below
  if (x == 0.0) { return -inf_f32(); }
  if (x < 0.0 || is_nan(x)) { return nan_f32(); }
  return log(x);
}

fn row_base(row: u32) -> u32 {
  var rem = row;
  var off = 0u;
  for (var d = 0u; d < KEPT; d++) {
    let e = KEPT - 1u - d;
    off += (rem % m(2u + e)) * m(2u + KEPT + e);
    rem = rem / m(2u + e);
  }
  return off;
}

fn at(base: u32, j: u32) -> u32 {
  var rem = j;
  var off = base;
  for (var d = 0u; d < RED; d++) {
    let e = RED - 1u - d;
    off += (rem % m(2u + 2u * KEPT + e)) * m(2u + 2u * KEPT + RED + e);
    rem = rem / m(2u + 2u * KEPT + e);
  }
  return off;
}

// op: 0 sum, 1 max (NaN wins), 2 min (NaN wins), 3 product
fn combine(op: u32, a: f32, b: f32) -> f32 {
  switch op {
    case 0u: { return a + b; }
    case 1u: { return max_nan(a, b); }
    case 2u: { return min_nan(a, b); }
    default: { return a * b; }
  }
}

fn wg_reduce(op: u32, v: f32, lid: u32) -> f32 {
  sh[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { sh[lid] = combine(op, sh[lid], sh[lid + s]); }
    workgroupBarrier();
  }
  let r = sh[0];
  workgroupBarrier();
  return r;
}
fn wg_sum(v: f32, lid: u32) -> f32 { return wg_reduce(0u, v, lid); }
fn wg_max(v: f32, lid: u32) -> f32 { return wg_reduce(1u, v, lid); }
fn wg_min(v: f32, lid: u32) -> f32 { return wg_reduce(2u, v, lid); }
fn wg_prod(v: f32, lid: u32) -> f32 { return wg_reduce(3u, v, lid); }

// ArgMax / ArgMin order: whether (b, ib) beats (a, ia). NaN beats numbers (numpy's argmax and argmin pick the
// first NaN); ties go to the lower index, or the higher with `last`.
fn beats(a: f32, ia: u32, b: f32, ib: u32, want_max: bool, last: bool) -> bool {
  if (ib == NONE) { return false; }
  if (ia == NONE) { return true; }
  let an = is_nan(a);
  let bn = is_nan(b);
  if (an || bn) {
    if (an && bn) { return select((ib < ia), (ib > ia), last); }
    return bn;
  }
  if (a == b) { return select((ib < ia), (ib > ia), last); }
  return select((b < a), (b > a), want_max);
}

fn wg_arg(v: f32, i: u32, lid: u32, want_max: bool, last: bool) -> u32 {
  sh[lid] = v;
  shi[lid] = i;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s && beats(sh[lid], shi[lid], sh[lid + s], shi[lid + s], want_max, last)) {
      sh[lid] = sh[lid + s];
      shi[lid] = shi[lid + s];
    }
    workgroupBarrier();
  }
  let r = shi[0];
  workgroupBarrier();
  return r;
}

// Inclusive prefix sums of one value per thread (Hillis-Steele); the workgroup's total is sh[WG - 1] after.
fn wg_scan(v: f32, lid: u32) -> f32 {
  sh[lid] = v;
  workgroupBarrier();
  for (var s = 1u; s < WG; s = s * 2u) {
    var t = 0.0;
    if (lid >= s) { t = sh[lid - s]; }
    workgroupBarrier();
    sh[lid] += t;
    workgroupBarrier();
  }
  return sh[lid];
}

@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let row = wid.x + wid.y * ${MAX_GROUPS}u;
  if (row >= m(0u)) { return; }
  let lid = lid3.x;
  let n = m(1u);
  let base = row_base(row);
  ${BODY}
}
