// worker.mjs — owns the Web Worker side: a module Worker that runs one PyodideHost and answers the page's
// {id, method, args} messages with {id, result} or {id, error, code}; output buffers are transferred, not copied.
// A run that calls a JS custom-op kernel asks the page ({kernel: {callId, ...}}), where the kernel lives, and awaits
// its {kernelReply: callId, outputs | error}.
import { PyodideHost } from './host.mjs';
// host.mjs's own imports, named here too: fetched one level below this module instead of three
import './assets.mjs';
import './layout.mjs';
import './site_tar.mjs';

const host = new PyodideHost();
const kernelCalls = new Map(); // callId -> {resolve, reject}
let nextCall = 1;

host.callKernel = (kernelId, inputs, attributes) => new Promise((resolve, reject) => {
  const callId = nextCall++;
  kernelCalls.set(callId, { resolve, reject });
  const transfer = inputs.map((w) => w?.data?.buffer).filter((b) => b instanceof ArrayBuffer);
  self.postMessage({ kernel: { callId, kernelId, inputs, attributes } }, transfer);
});

function transferables(result) {
  const list = [];
  for (const o of Object.values(result?.outputs || {})) {
    if (o.data instanceof ArrayBuffer) list.push(o.data);
  }
  if (result?.data instanceof ArrayBuffer) list.push(result.data);
  return list;
}

self.onmessage = async (ev) => {
  if (ev.data.kernelReply !== undefined) {
    const { kernelReply, outputs, error } = ev.data;
    const call = kernelCalls.get(kernelReply);
    kernelCalls.delete(kernelReply);
    if (call && error !== undefined) call.reject(new Error(error));
    else if (call) call.resolve(outputs);
    return;
  }
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
