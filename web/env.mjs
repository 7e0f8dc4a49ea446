// env.mjs — owns `env`, the global settings object (onnxruntime-web's `ort.env` shape plus `env.onnxide`).
// Read when the first session starts the host; changing host settings later has no effect.

export const env = {
  logLevel: 'warning', // 'verbose' | 'info' | 'warning' | 'error' | 'fatal'
  debug: false,
  versions: { web: '0.1.0', onnxide: undefined, pyodide: undefined }, // filled once the host is up
  // Accepted for onnxruntime-web compatibility: Pyodide has no threads, so numThreads is always 1 in effect.
  wasm: { numThreads: 1, simd: true, proxy: true, wasmPaths: undefined, initTimeout: 0 },
  webgpu: { powerPreference: undefined, adapter: undefined, device: undefined },
  onnxide: {
    // 'worker' (default in a browser: Pyodide runs in a module Web Worker), 'page' (in this realm), or 'auto'
    // (worker in a browser, in-process in Node.js). `env.wasm.proxy = false` also selects 'page'.
    host: 'auto',
    // Folder with manifest.json, pyodide/ and the onnxide wheel (built by .ci/setup_web.sh); default
    // ../build/web/ relative to this file. Override to serve the assets from elsewhere.
    assetsURL: undefined,
    // Extra Pyodide packages to load (names from pyodide-lock.json or wheel URLs).
    packages: [],
    // Called with host log lines (Pyodide stdout/stderr) when set.
    onLog: undefined,
  },
};
