"""EP devices (get_ep_devices), compiled-model compatibility and a session's per-node EP assignment."""
from .enums import OrtCompiledModelCompatibility, OrtHardwareDeviceType
from .enums import OrtDeviceVendorId as Vendor
from . import providers as eps

_GPU_EPS = {"WebGpuExecutionProvider"}  # onnxide's EPs computing in device memory
_CPU_VENDORS = {"GenuineIntel": ("Intel", Vendor.INTEL), "AuthenticAMD": ("AMD", 0x1022)}


def _cpu_vendor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return _CPU_VENDORS.get(line.split(":", 1)[1].strip(), ("", 0))
    except OSError:
        pass
    return "", 0


class OrtHardwareDevice:
    def __init__(self, kind, vendor, vendor_id, device_id=0, metadata=None):
        self.type, self.vendor, self.vendor_id = kind, vendor, int(vendor_id)
        self.device_id, self.metadata = device_id, dict(metadata or {})


class OrtEpDevice:
    """An execution provider paired with a hardware device it runs on."""

    def __init__(self, ep_name, device, ep_vendor="onnxide", ep_metadata=None):
        from .. import __version__
        self.ep_name, self.ep_vendor, self.device = ep_name, ep_vendor, device
        self.ep_metadata, self.ep_options = dict(ep_metadata or {"version": __version__}), {}

    def memory_info(self, device_memory_type=0):
        from .memory_info import CPU_MEMORY
        return CPU_MEMORY if self.device.type == OrtHardwareDeviceType.CPU else None

    def __repr__(self):
        return f"OrtEpDevice({self.ep_name}, {self.device.type})"


def get_hardware_devices():
    vendor, vendor_id = _cpu_vendor()
    return [OrtHardwareDevice(OrtHardwareDeviceType.CPU, vendor, vendor_id)]


def get_ep_devices():
    """One entry per available EP: host EPs on the CPU, device EPs on a GPU; CPUExecutionProvider last."""
    cpu = get_hardware_devices()[0]
    out = []
    for name in eps.available_providers():
        if name not in _GPU_EPS:
            out.append(OrtEpDevice(name, cpu))
        else:
            out.append(OrtEpDevice(name, OrtHardwareDevice(OrtHardwareDeviceType.GPU, "", 0)))
    out.sort(key=lambda d: d.ep_name == "CPUExecutionProvider")
    return out


def get_model_compatibility_for_ep_devices(ep_devices, compatibility_info):
    """Whether a model compiled for these devices' EP can run as is: onnxide's EPs compile nothing, so a model's
    compiled parts never apply to them (EP_NOT_APPLICABLE)."""
    if not isinstance(compatibility_info, str):
        raise TypeError("compatibility_info must be a str")
    devices = list(ep_devices)
    if not devices:
        raise RuntimeError("ep_devices must not be empty")
    if len({d.ep_name for d in devices}) != 1:
        raise RuntimeError("All ep_devices must belong to the same execution provider")
    return OrtCompiledModelCompatibility.EP_NOT_APPLICABLE


class OrtEpAssignedNode:
    def __init__(self, node):
        self.domain, self.op_type, self.name = node.domain, node.op_type, node.name


class OrtEpAssignedSubgraph:
    """Nodes of the main graph one EP runs together (onnxide's EPs run nodes one by one: one node each)."""

    def __init__(self, ep_name, nodes):
        self.ep_name, self._nodes = ep_name, [OrtEpAssignedNode(n) for n in nodes]

    def get_nodes(self):
        return list(self._nodes)


def graph_assignment(plan):
    """The subgraphs of a main plan's steps (transfers left out), in execution order."""
    return [OrtEpAssignedSubgraph(s.ep.name, [s.node]) for s in plan.steps
            if not s.is_transfer and s.ep is not None]
