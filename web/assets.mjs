// assets.mjs — owns finding and fetching files: the assets manifest (Pyodide folder, onnxide wheel, WASM kernels,
// where the host's own modules are), and fetch-with-progress for models and external data (http(s) via fetch, file:
// URLs via fs in Node.js).
import { ASSETS_DIR, ASSETS_HINT } from './layout.mjs';

export const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined'
  && typeof importScripts === 'undefined';

/** A Node.js built-in, imported by a computed name so that bundlers (esbuild, Vite) leave it out of browser builds. */
const nodeModule = (name) => import(/* @vite-ignore */ `node:${name}`);

/** Default assets folder, relative to this module (layout.mjs): the repository's build/web/, the package's onnxide/. */
export function defaultAssetsURL() {
  return new URL(ASSETS_DIR, import.meta.url).href;
}

function concat(chunks, total) {
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** Bytes of `url` (string or URL). onProgress(loaded, total|undefined) is called as chunks arrive. */
export async function fetchBytes(url, onProgress) {
  const u = new URL(url, isNode ? `file://${process.cwd()}/` : globalThis.location?.href);
  if (u.protocol === 'file:' && isNode) {
    const { readFile } = await nodeModule('fs/promises');
    const { fileURLToPath } = await nodeModule('url');
    let buf;
    try {
      buf = await readFile(fileURLToPath(u));
    } catch (e) {
      throw Object.assign(new Error(e.message), { fsCode: e.code });
    }
    const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    if (onProgress) onProgress(bytes.length, bytes.length);
    return bytes;
  }
  let res;
  try {
    res = await fetch(u.href);
  } catch (e) {
    throw new Error(`Failed to fetch ${u.href}: ${e.message}`);
  }
  if (!res.ok) {
    throw Object.assign(new Error(`Failed to fetch ${u.href}: HTTP ${res.status} ${res.statusText}`.trim()),
      { httpStatus: res.status });
  }
  const total = Number(res.headers.get('content-length')) || undefined;
  if (!res.body || !onProgress) {
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (onProgress) onProgress(bytes.length, total ?? bytes.length);
    return bytes;
  }
  const reader = res.body.getReader();
  const chunks = [];
  let loaded = 0;
  onProgress(0, total);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    onProgress(loaded, total);
  }
  return concat(chunks, loaded);
}

export async function fetchText(url) {
  return new TextDecoder().decode(await fetchBytes(url));
}

/** {assetsURL, indexURL, wheelURL, pyodideVersion, demoModelURL, wasmKernelURLs, bytecodeURLs, runtimeURL,
 * snapshotURL, sitePackagesURL} from `<assetsURL>/manifest.json` (bytecodeURLs: zips of pycs for site-packages,
 * numpy's; snapshotURL / sitePackagesURL: the host's fast boot, when the manifest names them)
 * (runtimeURL: the folder of worker.mjs / host.mjs / bridge.py, when the manifest names one: the npm package's). */
export async function resolveAssets(assetsURL) {
  const base = new URL(assetsURL || defaultAssetsURL(), isNode ? `file://${process.cwd()}/` : globalThis.location?.href);
  let manifest;
  try {
    manifest = JSON.parse(await fetchText(new URL('manifest.json', base)));
  } catch (e) {
    throw new Error(`onnxide web assets not found at ${base.href} (${ASSETS_HINT}): ${e.message}`);
  }
  return {
    assetsURL: base.href,
    pyodideVersion: manifest.pyodideVersion,
    indexURL: new URL(manifest.indexURL, base).href,
    wheelURL: new URL(manifest.wheel, base).href,
    demoModelURL: manifest.demoModel ? new URL(manifest.demoModel, base).href : undefined,
    wasmKernelURLs: (manifest.wasmKernels || []).map((k) => new URL(k, base).href),
    bytecodeURLs: (manifest.bytecode || []).map((k) => new URL(k, base).href),
    runtimeURL: manifest.runtime ? new URL(manifest.runtime, base).href : undefined,
    snapshotURL: manifest.snapshot ? new URL(manifest.snapshot, base).href : undefined,
    sitePackagesURL: manifest.sitePackages ? new URL(manifest.sitePackages, base).href : undefined,
  };
}

/** A path for Pyodide in Node.js (it wants file paths there), the URL itself elsewhere. */
export async function forPyodide(url) {
  if (isNode && url.startsWith('file:')) {
    const { fileURLToPath } = await nodeModule('url');
    return fileURLToPath(url) + (url.endsWith('/') ? '/' : '');
  }
  return url;
}
