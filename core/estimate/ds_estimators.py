"""DeepSpeed's own model-state estimators, restated so the budget can show them next to ours.

Same formulas as deepspeed/runtime/zero/stage_1_and_2.py ``estimate_zero2_model_states_mem_needs``
and stage3.py ``estimate_zero3_model_states_mem_needs`` (DeepSpeed 0.19.8, default
additional_buffer_factor 1.5); tests/unit/test_memory.py checks them against DeepSpeed's functions. They are
restated rather than imported because importing DeepSpeed takes seconds and the budget bar updates on
every keystroke. They count every parameter as trainable and ignore activations: the anchor to beat.
"""
from __future__ import annotations

from typing import Any, Optional

BUFFER_FACTOR = 1.5


def zero2_model_states(total_params: int, gpus_per_node: int, nodes: int, cpu_offload: bool) -> tuple[int, int]:
    """(cpu_bytes, gpu_bytes) as estimate_zero2_model_states_mem_needs returns them."""
    total_gpus = nodes * gpus_per_node
    if cpu_offload:
        gpu = 2 * total_params
        cpu = total_params * max(4 * total_gpus, 16) * BUFFER_FACTOR
    else:
        gpu = 2 * total_params + int(18 * total_params / total_gpus)
        cpu = total_params * 4 * gpus_per_node * BUFFER_FACTOR
    return int(cpu), int(gpu)


def zero3_model_states(total_params: int, largest_layer_params: int, gpus_per_node: int, nodes: int,
                       cpu_offload: bool, cpu_offload_params: bool, zero_init: bool) -> tuple[int, int]:
    """(cpu_bytes, gpu_bytes) as estimate_zero3_model_states_mem_needs returns them."""
    total_gpus = nodes * gpus_per_node
    gpus_factor = 1 / nodes
    largest = 4 * largest_layer_params
    if cpu_offload:
        if cpu_offload_params:
            gpu = largest
            mult = 18 * gpus_factor if zero_init else max(4 * gpus_per_node, 18 * gpus_factor)
        else:
            gpu = largest + int(2 * total_params / total_gpus)
            mult = 16 * gpus_factor if zero_init else max(4 * gpus_per_node, 16 * gpus_factor)
        cpu = total_params * mult * BUFFER_FACTOR
    else:
        gpu = largest + int(18 * total_params / total_gpus)
        cpu = (largest_layer_params if zero_init else total_params) * 4 * gpus_per_node * BUFFER_FACTOR
    return int(cpu), int(gpu)


def deepspeed_estimate(plan, spec, total_params: int, gpus_per_node: int) -> Optional[dict[str, Any]]:
    """DeepSpeed's estimate for the same plan, or None for stage 0 (DeepSpeed has none).

    Offload to NVMe counts as offload (the functions only know 'offloaded or not'); stage 1 uses the
    stage-2 function, the closest DeepSpeed offers."""
    if plan.stage == 0:
        return None
    off_opt = plan.offload_optimizer != "none"
    if plan.stage == 3:
        cpu, gpu = zero3_model_states(total_params, spec.largest_layer_params, gpus_per_node, plan.nodes,
                                      off_opt, plan.offload_params != "none", plan.zero_init)
        fn = "estimate_zero3_model_states_mem_needs"
    else:
        cpu, gpu = zero2_model_states(total_params, gpus_per_node, plan.nodes, off_opt)
        fn = "estimate_zero2_model_states_mem_needs"
    return {"function": fn, "gpu_bytes": gpu, "cpu_bytes": cpu}
