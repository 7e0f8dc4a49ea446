// coldstart.mjs — owns the one definition of the cold-start split (navigation -> first result) of a page that runs a
// model with onnxide: consecutive parts on the page's clock, read by the demo's table, web/main_job.py and
// web/bench/cold_start.py.

/**
 * {totalMs, parts: [{part, ms}], overlapped: [{part, ms}], engineCreateMs} from the host's boot timings
 * (host.info.timings: wall-clock marks, since the host may run in a Worker), the first session's timings
 * (session.timings: marks on this page's performance.now()), when the page's own module started running
 * (`pageReady`) and when the first result came back (`firstAt`), both on this page's performance.now() (0 at
 * navigation). The parts add up to `firstAt`; the model download runs beside them.
 */
export function coldStartSplit(hostTimings, sessionTimings, pageReady, firstAt) {
  const h = hostTimings.marks, s = sessionTimings.marks;
  const at = (t) => t - performance.timeOrigin;
  const snapshot = hostTimings.boot === 'snapshot';  // (web/host.mjs's fast boot)
  const points = [
    ['page and JS modules', pageReady],
    ['host start (assets manifest, Worker and its modules, pyodide.mjs)', at(h.loadPyodide)],
    [snapshot ? 'Pyodide boot (memory snapshot restored; numpy + onnxide written from one archive meanwhile)'
      : 'Pyodide boot (numpy + onnxide wheels installed meanwhile)', at(h.pyodide)],
    [snapshot ? 'WASM kernels into Pyodide' : 'numpy bytecode + WASM kernels into Pyodide', at(h.kernels)],
    ['import numpy', at(h.numpy)],
    ['import onnxide', at(h.onnxide)],
    ['bridge import', at(h.bridge)],
    ['host ready -> create call (model wait, external-data check)', s.createCall],
    ['session creation', s.created],
    ['first result (first run, page work)', firstAt],
  ];
  let prev = 0;
  const parts = points.map(([part, t]) => {
    const ms = t - prev;
    prev = t;
    return { part, ms };
  });
  return { totalMs: firstAt, parts, engineCreateMs: sessionTimings.createMs,
    overlapped: [{ part: 'model download', ms: s.modelLoaded - s.start }] };
}
