// backends.mjs — owns the backend registry of onnxruntime-web's API: registerBackend(name, backend, priority) and
// which backend a session's executionProviders resolve to (unknown names fail: "no available backend found. ERR:
// [webgpu] backend not found."; an unavailable one next to an available one is dropped with a warning).

const registry = new Map(); // name -> {backend, priority, ready: Promise | undefined, ok: boolean}
const byPriority = []; // names with priority >= 0, highest first (the defaults when no provider is named)
const initChains = new WeakMap(); // backend -> its last init, so one backend's inits run one after another

/** Register `backend` ({init(name), createInferenceSessionHandler(model, options)}) under an execution-provider name;
 * a name keeps the backend of the higher priority; priority < 0 is never used unless named. */
export function registerBackend(name, backend, priority) {
  if (!backend || typeof backend.init !== 'function' || typeof backend.createInferenceSessionHandler !== 'function') {
    throw new TypeError('not a valid backend');
  }
  const current = registry.get(name);
  if (current) {
    if (current.priority > priority) return;
    if (current.priority === priority && current.backend !== backend) {
      throw new Error(`cannot register backend "${name}" using priority ${priority}`);
    }
  }
  if (!current || current.backend !== backend) registry.set(name, { backend, priority });
  else current.priority = priority;
  const at = byPriority.indexOf(name);
  if (at !== -1) byPriority.splice(at, 1);
  if (priority >= 0) {
    const before = byPriority.findIndex((n) => registry.get(n).priority <= priority);
    byPriority.splice(before === -1 ? byPriority.length : before, 0, name);
  }
}

/** The backend registered as `name`, initialised once for that name; a string says why it is not available. */
async function initialised(name) {
  const entry = registry.get(name);
  if (!entry) return 'backend not found.';
  if (entry.ok) return entry.backend;
  if (!entry.ready) {
    const previous = initChains.get(entry.backend) || Promise.resolve();
    entry.ready = previous.catch(() => {}).then(() => entry.backend.init(name));
    initChains.set(entry.backend, entry.ready);
  }
  try {
    await entry.ready;
    entry.ok = true;
    return entry.backend;
  } catch (e) {
    entry.ready = undefined; // a later session tries again (a host that could not boot may boot next time)
    return `${e}`;
  }
}

/**
 * [backend, options] for a session: the first backend that initialises among the named execution providers (or,
 * when none is named, the registered ones by priority), and the options with executionProviders narrowed to the
 * names served by that backend.
 */
export async function resolveBackend(options) {
  const eps = options.executionProviders || [];
  const named = eps.map((e) => (typeof e === 'string' ? e : e.name));
  let backend;
  const errors = [];
  const served = new Set();
  for (const name of named.length ? named : [...byPriority]) {
    const got = await initialised(name);
    if (typeof got === 'string') errors.push([name, got]);
    else {
      backend = backend || got;
      if (got === backend) served.add(name);
      if (!named.length) break; // the default: the first backend that starts (later ones are not started)
    }
  }
  if (!backend) throw new Error(`no available backend found. ERR: ${errors.map(([n, e]) => `[${n}] ${e}`).join(', ')}`);
  for (const [name, why] of named.length ? errors : []) {
    console.warn(`removing requested execution provider "${name}" from session options because it is not available: ${why}`);
  }
  const kept = eps.filter((e) => served.has(typeof e === 'string' ? e : e.name));
  return [backend, new Proxy(options, { get: (o, k) => (k === 'executionProviders' ? kept : Reflect.get(o, k)) })];
}
