"""The op registry reads each kernel's parameters from its code object (registry._parameters, for import speed):
the same kinds, names, order and defaults inspect.signature gives, for every registered kernel."""
import inspect

import onnxide  # noqa: F401 - registers every op
from onnxide.ops import registry


def test_parameters_are_inspect_signatures():
    kernels = [d.kernel for defs in registry._REGISTRY.values() for d in defs]
    assert len(kernels) > 300
    for k in kernels:
        want = [(p.kind, p.name, repr(p.default)) for p in inspect.signature(k).parameters.values()]
        assert [(kind, name, repr(d)) for kind, name, d in registry._parameters(k)] == want, k


def test_a_kernel_with_a_signature_of_its_own_and_a_plain_one():
    def plain(a, b=None, /, c=2, *rest, d, e=1.5, ctx=None, **extra):
        pass

    def shown(*args, **kwargs):
        pass

    shown.__signature__ = inspect.signature(lambda x, *, alpha=0.5: None)
    for fn in (plain, shown):
        want = [(p.kind, p.name, p.default) for p in inspect.signature(fn).parameters.values()]
        assert registry._parameters(fn) == want
