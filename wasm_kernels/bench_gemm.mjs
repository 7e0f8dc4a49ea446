// GEMM GFLOP/s of an onnxide kernel module straight in a JS engine (V8 in Node or a page), no Pyodide involved.
// The side module is instantiated against a fresh memory (its imports: env.memory, __stack_pointer, __memory_base,
// __table_base). Node:    node [--experimental-wasm-relaxed-simd] wasm_kernels/bench_gemm.mjs [build/wasm] [256,512]
// Browser: import { benchGemm } from "./bench_gemm.mjs"; await benchGemm(await (await fetch(url)).arrayBuffer())
export async function benchGemm(bytes, sizes = [256, 512, 1024], budgetMs = 1000) {
  const maxN = Math.max(...sizes);
  const stackTop = 1 << 20;
  const scratchFloats = 1 << 20;
  const need = stackTop + 4 * (3 * maxN * maxN + scratchFloats) + 4096;
  const memory = new WebAssembly.Memory({ initial: Math.ceil(need / 65536) });
  const env = {
    memory,
    __stack_pointer: new WebAssembly.Global({ value: "i32", mutable: true }, stackTop),
    __memory_base: new WebAssembly.Global({ value: "i32", mutable: false }, 1024),
    __table_base: new WebAssembly.Global({ value: "i32", mutable: false }, 0),
  };
  const { instance } = await WebAssembly.instantiate(bytes, { env });
  const ex = instance.exports;
  ex.__wasm_apply_data_relocs?.();
  const scratchNeed = ex.ox_gemm_scratch_floats();
  if (scratchNeed > scratchFloats) throw new Error(`scratch ${scratchNeed} floats > ${scratchFloats}`);
  const rows = [];
  for (const n of sizes) {
    const a = stackTop + 64, b = a + 4 * n * n, c = b + 4 * n * n, s = c + 4 * n * n;
    const f = new Float32Array(memory.buffer);
    for (let i = 0; i < 2 * n * n; i++) f[a / 4 + i] = Math.random() - 0.5;
    const run = () => ex.ox_gemm(1, n, n, n, a, n, 1, 0, b, n, 1, 0, c, n, 0, 1.0, 0, 0, 0, 0, 0.0, 0, 0, 0, s);
    run(); run();  // baseline tier, then optimized code
    const times = [];
    const end = performance.now() + budgetMs;
    while (times.length < 3 || (performance.now() < end && times.length < 50)) {
      const t = performance.now();
      run();
      times.push(performance.now() - t);
    }
    times.sort((x, y) => x - y);
    const med = times[times.length >> 1], best = times[0];
    rows.push({ n, ms: +med.toFixed(3), best_ms: +best.toFixed(3), gflops: +(2 * n ** 3 / med / 1e6).toFixed(2),
                best_gflops: +(2 * n ** 3 / best / 1e6).toFixed(2) });
  }
  return rows;
}

if (typeof process !== "undefined" && import.meta.url === `file://${process.argv[1]}`) {
  const fs = await import("node:fs");
  const path = await import("node:path");
  const dir = process.argv[2] || path.join(path.dirname(new URL(import.meta.url).pathname), "..", "build", "wasm");
  const sizes = (process.argv[3] || "256,512,1024").split(",").map(Number);
  for (const build of ["simd128", "relaxed"]) {
    const file = path.join(dir, `onnxide_kernels_${build}.wasm`);
    try {
      const rows = await benchGemm(fs.readFileSync(file), sizes);
      for (const r of rows) console.log(JSON.stringify({ host: `node ${process.version}`, build, ...r }));
    } catch (e) {
      console.log(JSON.stringify({ build, error: String(e.message || e) }));
    }
  }
}
