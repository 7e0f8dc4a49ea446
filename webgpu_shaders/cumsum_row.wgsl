// CumSum: the body of one rows.wgsl row (the axis, n elements). Chunks of WG elements are scanned in workgroup
// memory (wg_scan) and offset by the running total of the chunks before; reverse walks the row from its end,
// exclusive takes the sum before each element. Parameters: pu(0) reverse, pu(1) exclusive.
let reverse = pu(0) != 0u;
  let exclusive = pu(1) != 0u;
  var carry = 0.0;
  for (var c = 0u; c < n; c += WG) {
    let j = c + lid;
    let jj = select(j, n - 1u - j, reverse);
    var v = 0.0;
    if (j < n) { v = f32(ld_x(at(base, jj))); }
    let inclusive = wg_scan(v, lid);
    let before = select(0.0, sh[max(lid, 1u) - 1u], lid > 0u);
    if (j < n) { ${STORE} }
    let total = sh[WG - 1u];
    workgroupBarrier();
    carry += total;
  }
