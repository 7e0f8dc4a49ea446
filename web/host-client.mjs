// host-client.mjs — owns starting the host and talking to it: a WorkerHost (page side of worker.mjs: request ids,
// transfers, a dead worker rejects every pending and later call; the Worker's calls of JS custom-op kernels answered
// here) or a LocalHost (PyodideHost in this realm). The host's modules come from the folder the assets manifest
// names (the npm package's onnxide/), else from here.
import { env, assetsOverride } from './env.mjs';
import { isNode, resolveAssets } from './assets.mjs';

/** What runs a JS custom-op kernel the host asks for: (kernelId, wire inputs, attributes) => Promise<wire outputs>
 * (onnxide-backend.mjs sets it; the kernels live in the page). */
let kernelCaller = async (kernelId) => { throw new Error(`no JS custom-op kernel ${kernelId} in this page`); };

export function setKernelCaller(fn) {
  kernelCaller = fn;
}

/** A host error as the bridge reports it: the message, with onnxruntime's error code as `.code`. */
function hostError({ error, code, what }) {
  return Object.assign(new Error(error), { code, what });
}

class WorkerHost {
  constructor(runtimeURL) {
    this.mode = 'worker';
    this.worker = new Worker(new URL('worker.mjs', runtimeURL), { type: 'module', name: 'onnxide' });
    this.pending = new Map();
    this.nextId = 1;
    this.dead = null;
    this.worker.onmessage = (ev) => {
      const { id, result, error, log, kernel } = ev.data;
      if (log !== undefined) {
        if (env.onnxide.onLog) env.onnxide.onLog(log);
        return;
      }
      if (kernel !== undefined) {
        this.answerKernel(kernel);
        return;
      }
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      if (error !== undefined) p.reject(hostError(ev.data));
      else p.resolve(result);
    };
    const die = (why) => {
      this.dead = new Error(`onnxide worker died: ${why}`);
      for (const p of this.pending.values()) p.reject(this.dead);
      this.pending.clear();
    };
    this.worker.onerror = (ev) => { ev.preventDefault?.(); die(ev.message || 'error while loading worker.mjs'); };
    this.worker.onmessageerror = () => die('a message could not be deserialized');
  }

  /** A run in the Worker calls a JS custom-op kernel: run it here, post {kernelReply, outputs | error} back. */
  async answerKernel({ callId, kernelId, inputs, attributes }) {
    let reply;
    try {
      reply = { kernelReply: callId, outputs: await kernelCaller(kernelId, inputs, attributes) };
    } catch (e) {
      reply = { kernelReply: callId, error: String(e && e.message ? e.message : e) };
    }
    if (!this.dead) this.worker.postMessage(reply);
  }

  call(method, args = {}, transfer = []) {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, method, args }, transfer);
    });
  }

  terminate() {
    this.worker.terminate();
    this.dead = new Error('onnxide worker was terminated');
  }
}

class LocalHost {
  constructor(mode, runtimeURL) {
    this.mode = mode;
    this.runtimeURL = runtimeURL;
    this.host = null;
  }

  async call(method, args = {}) {
    if (!this.host) {
      const { PyodideHost } = await import(/* @vite-ignore */ new URL('host.mjs', this.runtimeURL).href);
      this.host = this.host || new PyodideHost();
      this.host.callKernel = (kernelId, inputs, attributes) => kernelCaller(kernelId, inputs, attributes);
    }
    if (method === 'init') return this.host.init({ ...args, onLog: (l) => env.onnxide.onLog?.(l) });
    const result = await this.host.call(method, args);
    if (this.host.webgpu) env.webgpu.device = this.host.webgpu; // the page's GPUDevice (GPU buffers to feed)
    return result;
  }

  terminate() {}
}

function chooseMode() {
  const want = env.onnxide.host;
  if (isNode) return 'node';
  if (want === 'page') return 'page';
  if (want === 'worker' || typeof Worker === 'function') return 'worker';
  return 'page';
}

let started = null;

/** The shared host ({mode, call(method, args, transfer)} with `info` from init); booted on first use. */
export function getHost() {
  if (!started) {
    started = (async () => {
      const assets = await resolveAssets(assetsOverride());
      // (@vite-ignore: Vite would otherwise inline './', resolved to the package's main module, as a data: URL)
      const runtimeURL = assets.runtimeURL || new URL(/* @vite-ignore */ './', import.meta.url).href;
      const mode = chooseMode();
      const host = mode === 'worker' ? new WorkerHost(runtimeURL) : new LocalHost(mode, runtimeURL);
      let info;
      try {
        info = await host.call('init', { assets, packages: [...env.onnxide.packages] });
      } catch (e) {
        host.terminate();
        throw e;
      }
      host.info = info;
      env.versions.onnxide = info.onnxide;
      env.versions.pyodide = info.pyodideVersion;
      return host;
    })();
    started.catch(() => { started = null; });
  }
  return started;
}

/** Stop the host (the Worker is terminated); the next session boots a new one. */
export async function shutdownHost() {
  if (!started) return;
  const s = started;
  started = null;
  try {
    (await s).terminate();
  } catch {
    // it never started
  }
}
