// env.mjs — owns `env`, the global settings object: onnxruntime-web's shape and rules (logLevel checked on set,
// env.wasm flags filled in when a backend first starts, read-only env.versions.web) plus `env.onnxide`.
// Host settings are read when the first session starts the host; changing them later has no effect.

/** The onnxruntime-web release whose JS API this one follows (env.versions.common / .web). */
export const ORT_WEB_VERSION = '1.31.1';
const LOG_LEVELS = ['verbose', 'info', 'warning', 'error', 'fatal'];
let logLevel = 'warning';

export const env = {
  wasm: {},
  webgl: {},
  webgpu: {},
  versions: { common: ORT_WEB_VERSION },
  set logLevel(value) {
    if (value === undefined) return;
    if (typeof value !== 'string' || !LOG_LEVELS.includes(value)) throw new Error(`Unsupported logging level: ${value}`);
    logLevel = value;
  },
  get logLevel() {
    return logLevel;
  },
  onnxide: {
    // 'auto' (default: a module Web Worker in a browser, in-process in Node.js), 'worker', or 'page' (Pyodide in
    // this realm, blocking it while a model runs). env.wasm.proxy does not move Pyodide: the Worker is the default
    // whatever it says, since a library that sets proxy = false only asks for onnxruntime-web's own default.
    host: 'auto',
    // Folder with manifest.json, pyodide/ and the onnxide wheel. Default: the folder this copy of the modules was
    // packed with (the repository's build/web/, or onnxide/ beside the npm package's modules or your bundle);
    // else, when env.wasm.wasmPaths names a folder, its onnxide/ subfolder.
    assetsURL: undefined,
    // Extra Pyodide packages to load (names from pyodide-lock.json or wheel URLs).
    packages: [],
    // Called with host log lines (Pyodide stdout/stderr) when set.
    onLog: undefined,
  },
};
Object.defineProperty(env, 'logLevel', { enumerable: true });
Object.defineProperty(env.versions, 'web', { value: ORT_WEB_VERSION, enumerable: true });

/**
 * env.wasm's flags as onnxruntime-web fills them when its wasm backend starts: initTimeout 0, proxy / trace false
 * unless booleans, numThreads 1 in a page that is not cross-origin isolated, else min(4, cores / 2). onnxide runs
 * Python on one thread whatever numThreads says.
 */
export function initializeWasmFlags() {
  const w = env.wasm;
  if (typeof w.initTimeout !== 'number' || w.initTimeout < 0) w.initTimeout = 0;
  const simd = w.simd;
  if (typeof simd !== 'boolean' && simd !== undefined && simd !== 'fixed' && simd !== 'relaxed') {
    console.warn(`Property "env.wasm.simd" is set to unknown value "${simd}". Reset it to \`false\` and ignore SIMD `
      + 'feature checking.');
    w.simd = false;
  }
  if (typeof w.proxy !== 'boolean') w.proxy = false;
  if (typeof w.trace !== 'boolean') w.trace = false;
  if (typeof w.numThreads !== 'number' || !Number.isInteger(w.numThreads) || w.numThreads <= 0) {
    if (typeof self !== 'undefined' && !self.crossOriginIsolated) w.numThreads = 1;
    else {
      w.numThreads = Math.min(4, Math.ceil((globalThis.navigator?.hardwareConcurrency || 1) / 2));
    }
  }
}

/** The folder the assets come from: env.onnxide.assetsURL, else env.wasm.wasmPaths' onnxide/, else undefined. */
export function assetsOverride() {
  if (env.onnxide.assetsURL) return String(env.onnxide.assetsURL);
  const paths = env.wasm.wasmPaths;
  const folder = typeof paths === 'string' || paths instanceof URL ? String(paths)
    : paths && paths.wasm ? String(paths.wasm).replace(/[^/]*$/, '') : undefined;
  if (!folder) return undefined;
  return `${folder}${folder.endsWith('/') ? '' : '/'}onnxide/`;
}
