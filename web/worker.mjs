// worker.mjs — owns the Web Worker side: a module Worker that runs one PyodideHost and answers the page's
// {id, method, args} messages with {id, result} or {id, error, code}; output buffers are transferred, not copied.
import { PyodideHost } from './host.mjs';

const host = new PyodideHost();

function transferables(result) {
  const list = [];
  for (const o of Object.values(result?.outputs || {})) {
    if (o.data instanceof ArrayBuffer) list.push(o.data);
  }
  if (result?.data instanceof ArrayBuffer) list.push(result.data);
  return list;
}

self.onmessage = async (ev) => {
  const { id, method, args } = ev.data;
  try {
    let result;
    if (method === 'init') {
      result = await host.init({ ...args, onLog: (line) => self.postMessage({ log: String(line) }) });
    } else {
      result = await host.call(method, args);
      if (method === 'run') for (const o of Object.values(result.outputs)) delete o.gpuBuffer; // stays in the Worker
    }
    self.postMessage({ id, result }, transferables(result));
  } catch (e) {
    self.postMessage({ id, error: String(e && e.message ? e.message : e), code: e?.code, what: e?.what });
  }
};
