"""Static buffer lifetimes of a plan: when each device slot is written and last read, and a fixed byte offset for
each one in a single arena such that slots alive at the same time never overlap — what a device needs to keep
addresses stable from run to run (CUDA graph replay) or to size a buffer pool up front."""
import math

import numpy as np

from .. import dtypes as dt


def slot_lifetimes(plan):
    """{device slot: (first step, last step)} for the slots the plan creates on devices: written by a step (or
    bound at run start: -1), alive through their last reader; graph outputs live to the end of the run."""
    end = len(plan.steps)
    first, last = {}, {}
    for key in plan.owned_dev:
        first[key] = -1
    for i, s in enumerate(plan.steps):
        for k in s.out_keys:
            if k in plan.owned_dev:
                first[k] = i
                last.setdefault(k, i)
        for k in list(s.in_keys) + list(s.body_keys):
            if k in plan.owned_dev:
                last[k] = i
    for k in plan.output_keys:
        if k in plan.owned_dev:
            last[k] = end
    return {k: (first[k], last.get(k, first[k])) for k in first}


def static_nbytes(plan, key):
    """The slot's size in bytes when the graph fixes its type and every dim, else None."""
    name = key if isinstance(key, str) else key[0]
    entry = plan.types.get(name)
    if not entry or not isinstance(entry[0], int) or entry[1] is None or \
            not all(isinstance(d, int) for d in entry[1]):
        return None
    try:
        item = np.dtype(dt.np_dtype(entry[0])).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    return math.prod(entry[1]) * item


def arena_offsets(lifetimes, sizes, alignment=256):
    """({slot: byte offset}, arena bytes) for the slots in `sizes` (bytes each): largest first, each at the lowest
    aligned offset clear of every placed slot whose lifetime intersects its own."""
    placed, offsets, top = [], {}, 0
    for key in sorted(sizes, key=lambda k: (-sizes[k], str(k))):
        a, b = lifetimes[key]
        size = -(-sizes[key] // alignment) * alignment
        busy = sorted((o, o + s) for k2, o, s in placed if not (lifetimes[k2][1] < a or b < lifetimes[k2][0]))
        at = 0
        for lo, hi in busy:
            if at + size <= lo:
                break
            at = max(at, hi)
        offsets[key] = at
        placed.append((key, at, size))
        top = max(top, at + size)
    return offsets, top


def arena_plan(plan, alignment=256):
    """(offsets, arena bytes, slots left dynamic) for the plan's device slots: those with static sizes get fixed
    offsets; the others (symbolic dims) are listed for the device to allocate per run."""
    lifetimes = slot_lifetimes(plan)
    sizes, dynamic = {}, []
    for key in lifetimes:
        n = static_nbytes(plan, key)
        if n is None:
            dynamic.append(key)
        else:
            sizes[key] = n
    offsets, total = arena_offsets(lifetimes, sizes, alignment)
    return offsets, total, dynamic
