"""What the GPU estimator's unit tests share: TinyLlama-1.1B's shape (the committed rows' 1.1B plans),
an 80 GB GPU with room on the host, and the environment that keeps PyTorch's default allocator."""
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.model.spec import _llama_family_spec

GIB = 2**30
SPEC_1B = _llama_family_spec("llama-1b", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 22,
                                          "num_attention_heads": 32, "num_key_value_heads": 4,
                                          "intermediate_size": 5632, "vocab_size": 32000}, "test")
DEFAULT_ALLOCATOR = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}


def box_80g() -> Hardware:
    return Hardware(gpus=[GpuInfo(index=0, name="test GPU", total_bytes=80 * GIB, free_bytes=80 * GIB,
                                  compute_capability=(9, 0), bf16=True)],
                    ram_total_bytes=512 * GIB, ram_available_bytes=512 * GIB)
