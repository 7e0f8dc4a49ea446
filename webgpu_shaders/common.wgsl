// Helpers every kernel family may use: IEEE classification by bits (WGSL lets implementations assume no NaN or
// infinity, so `x != x` is not a NaN test), NaN-propagating max / min, pow for negative bases, erf, and the
// index of a thread (${LINEAR} in the kernels).
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn nan_f32() -> f32 { var bits = 0x7fc00000u; return bitcast<f32>(bits); }  // (a var: Tint rejects a constant NaN)
fn inf_f32() -> f32 { var bits = 0x7f800000u; return bitcast<f32>(bits); }
fn log_f32(x: f32) -> f32 {  // IEEE's log at 0 and below (WGSL leaves log(x <= 0) to the implementation)
  if (x > 0.0) { return log(x); }
  return select(nan_f32(), -inf_f32(), x == 0.0);
}
fn sqrt_f32(x: f32) -> f32 { return select(nan_f32(), sqrt(x), x >= 0.0); }
fn max_nan(a: f32, b: f32) -> f32 { return select(select(max(a, b), b, is_nan(b)), a, is_nan(a)); }
fn min_nan(a: f32, b: f32) -> f32 { return select(select(min(a, b), b, is_nan(b)), a, is_nan(a)); }
fn pow_signed(a: f32, b: f32) -> f32 {
  if (a >= 0.0) { return pow(a, b); }
  if (fract(b) != 0.0) { return nan_f32(); }
  let r = pow(-a, b);
  return select(r, -r, fract(b * 0.5) != 0.0);
}
fn erf_f32(x: f32) -> f32 {
  let z = abs(x);
  if (z < 0.5) {  // Maclaurin series: |error| < 1e-9 here
    let x2 = x * x;
    return 1.1283791670955126 * x * (1.0 + x2 * (-0.3333333333 + x2 * (0.1 + x2 * (-0.0238095238
      + x2 * (0.0046296296 + x2 * (-0.0007575758 + x2 * 0.0001068376))))));
  }
  // erfc by a Chebyshev fit (fractional error < 1.2e-7)
  let t = 1.0 / (1.0 + 0.5 * z);
  let p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  let r = 1.0 - t * exp(p);
  return select(r, -r, x < 0.0);
}
fn sigmoid_f32(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }
fn tanh_f32(x: f32) -> f32 {
  if (abs(x) < 0.3) {  // the series: tanh's exp form loses small arguments to cancellation
    let x2 = x * x;
    return x * (1.0 + x2 * (-0.3333333333 + x2 * (0.1333333333 + x2 * (-0.0539682540 + x2 * (0.0218694885
      + x2 * -0.0088632355)))));
  }
  return tanh(clamp(x, -15.0, 15.0));
}
fn log1p_f32(y: f32) -> f32 {  // log(1 + y) without losing a small y to the rounding of 1 + y
  let u = 1.0 + y;
  return select(log(u) * y / (u - 1.0), y, u == 1.0);
}
fn softplus_f32(x: f32) -> f32 { return max(x, 0.0) + log1p_f32(exp(-abs(x))); }
