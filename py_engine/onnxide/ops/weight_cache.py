"""Derived forms of constant weights (Winograd transforms, packed GEMM panels) cached per weight array object: an
entry holds only a weak reference to the array, dies with it, and is recomputed when the array's shape, dtype or a
sample of its values changed."""
import threading
import weakref

_LOCK = threading.Lock()
_CACHE = {}  # (id(w), tag) -> (weak reference to w, signature, derived value)


def _fingerprint(w):
    flat = w.reshape(-1)
    step = max(1, flat.size // 16)
    return flat[::step][:16].tobytes()


def _forget(key):
    def cb(ref):
        with _LOCK:
            ent = _CACHE.get(key)
            if ent is not None and ent[0] is ref:
                del _CACHE[key]
    return cb


def cached(w, tag, compute):
    """compute(w), remembered for this array object under `tag` (a hashable naming the derived form)."""
    key = (id(w), tag)
    sig = (w.shape, w.dtype.str, _fingerprint(w))
    with _LOCK:
        ent = _CACHE.get(key)
    if ent is not None and ent[0]() is w and ent[1] == sig:
        return ent[2]
    value = compute(w)
    try:
        ref = weakref.ref(w, _forget(key))
    except TypeError:  # not weak-referenceable (a numpy scalar): not cached
        return value
    with _LOCK:
        _CACHE[key] = (ref, sig, value)
    return value


def derived(w, tag, compute):
    """compute(w), cached (as `cached`) when w is read-only — initializers: the executor marks them so — and
    computed anew for a writeable array (a feed its caller may refill in place)."""
    return compute(w) if w.flags.writeable else cached(w, tag, compute)
