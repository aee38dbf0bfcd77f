"""What the machine has, as plain data: produced by ``hardware.detect()``, stated by the user
(``--gpu-mem 24GiB --ram 64GiB``), or faked in tests. Everything that plans a run reads this, never
NVML or psutil directly, so planning works the same on a laptop, in CI and on the GPU box."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional


@dataclass
class GpuInfo:
    index: int
    name: str
    total_bytes: int
    free_bytes: int
    compute_capability: tuple[int, int] = (0, 0)
    bf16: bool = False                   # compute capability >= 8.0 (Ampere) has native bf16
    uuid: str = ""
    pcie_gen: Optional[int] = None
    pcie_width: Optional[int] = None
    power_limit_w: Optional[float] = None
    nvml_index: Optional[int] = None     # NVML's (PCI bus order) index; ``index`` is the CUDA ordinal
    error: str = ""                      # NVML queries that failed for this GPU (their fields are defaults)


@dataclass
class DiskInfo:
    device: str                          # e.g. /dev/nvme0n1p1
    mountpoint: str
    fstype: str
    total_bytes: int
    free_bytes: int
    nvme: bool = False                   # the block device is an NVMe drive
    rotational: Optional[bool] = None    # True for spinning disks; None when unknown
    writable: bool = True
    other_mountpoints: list[str] = field(default_factory=list)  # bind mounts of the same filesystem


@dataclass
class Hardware:
    gpus: list[GpuInfo] = field(default_factory=list)
    cpu_model: str = ""
    cpu_cores: int = 1                   # physical cores where known, else logical
    cpu_threads: int = 1
    ram_total_bytes: int = 0
    ram_available_bytes: int = 0
    swap_total_bytes: int = 0
    swap_free_bytes: int = 0
    shm_total_bytes: int = 0             # /dev/shm: DeepSpeed's shm comm and NCCL use it
    shm_free_bytes: int = 0
    disks: list[DiskInfo] = field(default_factory=list)
    driver_version: str = ""
    cuda_driver_version: str = ""
    nvml_error: str = ""                 # why no GPU was seen, when NVML failed
    in_container: bool = False
    ram_host_bytes: int = 0              # RAM of the machine; ram_total_bytes is less under a cgroup limit
    cgroup_memory_limit_bytes: Optional[int] = None
    notes: list[str] = field(default_factory=list)  # what could not be read, and other caveats
    source: str = "detected"             # detected | stated | fake

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    @property
    def gpu_total_bytes(self) -> int:
        """Memory of the smallest GPU: with data parallelism every GPU must fit the same share."""
        return min((g.total_bytes for g in self.gpus), default=0)

    @property
    def bf16_supported(self) -> bool:
        return bool(self.gpus) and all(g.bf16 for g in self.gpus)

    @property
    def nvme_disks(self) -> list[DiskInfo]:
        return [d for d in self.disks if d.nvme]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Hardware":
        data = dict(data)
        gpus = []
        for g in data.pop("gpus", []) or []:
            g = dict(g)
            g["compute_capability"] = tuple(g.get("compute_capability") or (0, 0))
            gpus.append(GpuInfo(**g))
        disks = [DiskInfo(**d) for d in data.pop("disks", []) or []]
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(gpus=gpus, disks=disks, **known)
