"""OrtMemoryInfo, OrtArenaCfg and allocator registration (recorded: numpy owns onnxide's host memory)."""
from .enums import OrtAllocatorType, OrtDeviceMemoryType, OrtMemoryInfoDeviceType, OrtMemType
from .enums import OrtDeviceVendorId as Vendor
from . import env

# onnxruntime's memory names: (device type, device memory type, vendor id)
_NAMES = {
    "Cpu": (OrtMemoryInfoDeviceType.CPU, OrtDeviceMemoryType.DEFAULT, Vendor.NONE),
    "Cuda": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.DEFAULT, Vendor.NVIDIA),
    "CudaPinned": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.HOST_ACCESSIBLE, Vendor.NVIDIA),
    "DML": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.DEFAULT, Vendor.MICROSOFT),
    "OpenVINO_GPU": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.DEFAULT, Vendor.INTEL),
    "QnnHtpShared": (OrtMemoryInfoDeviceType.NPU, OrtDeviceMemoryType.HOST_ACCESSIBLE, Vendor.QUALCOMM),
    "WebGPU_Buffer": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.DEFAULT, Vendor.NONE),
    "WebNN_Tensor": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.DEFAULT, Vendor.NONE),
}


class OrtMemoryInfo:
    """A memory: name, allocator type, device id and memory type (`create_v2` for any device description)."""

    def __init__(self, name, allocator_type, device_id, mem_type):
        if name not in _NAMES:
            raise RuntimeError("Specified device is not supported. Try CreateMemoryInfo_V2.")
        kind, dev_mem, vendor = _NAMES[name]
        self._set(name, kind, dev_mem, vendor, device_id, allocator_type, mem_type)

    @classmethod
    def create_v2(cls, name, device_type, vendor_id, device_id, device_mem_type, alignment, allocator_type):
        info = cls.__new__(cls)
        info._set(name, OrtMemoryInfoDeviceType(device_type), OrtDeviceMemoryType(device_mem_type), vendor_id,
                  device_id, allocator_type, OrtMemType.DEFAULT)
        info.alignment = int(alignment)
        return info

    def _set(self, name, kind, dev_mem, vendor, device_id, allocator_type, mem_type):
        self.name, self.device_type, self.device_mem_type = name, kind, dev_mem
        self.device_vendor_id, self.device_id = int(vendor), int(device_id)
        self.allocator_type, self.mem_type = OrtAllocatorType(allocator_type), OrtMemType(mem_type)
        self.alignment = 0

    def __eq__(self, other):
        return isinstance(other, OrtMemoryInfo) and vars(self) == vars(other)

    __hash__ = object.__hash__

    def __repr__(self):
        return f"OrtMemoryInfo({self.name!r}, {self.allocator_type}, device_id={self.device_id}, {self.mem_type})"


CPU_MEMORY = OrtMemoryInfo("Cpu", OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, OrtMemType.DEFAULT)

_ARENA_KEYS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
               "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes")


class OrtArenaCfg:
    """Arena settings: OrtArenaCfg(max_mem, arena_extend_strategy, initial_chunk_size_bytes,
    max_dead_bytes_per_chunk) or OrtArenaCfg({key: value}); unset ones are -1 (onnxruntime's defaults)."""

    def __init__(self, *args):
        for key in _ARENA_KEYS:
            setattr(self, key, -1)
        if len(args) == 1 and isinstance(args[0], dict):
            for key, value in args[0].items():
                if key not in _ARENA_KEYS:
                    raise RuntimeError(f"Invalid OrtArenaCfg option: {key}")
                setattr(self, key, int(value))
        elif len(args) == 4:
            for key, value in zip(_ARENA_KEYS, args):
                setattr(self, key, int(value))
        else:
            raise TypeError("OrtArenaCfg takes (max_mem, arena_extend_strategy, initial_chunk_size_bytes, "
                            "max_dead_bytes_per_chunk) or a dict of options")


def create_and_register_allocator(mem_info, arena_cfg=None):
    """An allocator for `mem_info` shared by sessions with the config entry session.use_env_allocators = 1."""
    create_and_register_allocator_v2("CPUExecutionProvider", mem_info, {}, arena_cfg)


def create_and_register_allocator_v2(provider_type, mem_info, provider_options=None, arena_cfg=None):
    if not isinstance(mem_info, OrtMemoryInfo):
        raise TypeError(f"create_and_register_allocator needs an OrtMemoryInfo, not {type(mem_info).__name__}")
    if arena_cfg is not None and not isinstance(arena_cfg, OrtArenaCfg):
        raise TypeError(f"arena_cfg must be an OrtArenaCfg or None, not {type(arena_cfg).__name__}")
    if mem_info.device_type != OrtMemoryInfoDeviceType.CPU and not env.is_known_provider(provider_type):
        raise RuntimeError(f"Unknown Provider Type: {provider_type}")
    env.register_allocator((provider_type, mem_info, dict(provider_options or {}), arena_cfg))
