"""Small helpers shared by the kernels: attribute/input int lists and axis normalisation (one definition each)."""
import numpy as np

from ..errors import InvalidArgument


def ints(x):
    """A 1-D int tensor (or scalar / list / None) as a list of Python ints."""
    if x is None:
        return None
    return [int(v) for v in np.asarray(x).reshape(-1).tolist()]


def norm_axis(axis, rank, name):
    """`axis` in [0, rank) (negative counts from the end; a scalar behaves as rank 1); out of range raises."""
    r = max(rank, 1)
    a = int(axis)
    if not -r <= a < r:
        raise InvalidArgument(f"{name}: axis {axis} is out of range for rank {rank}")
    return a % r
