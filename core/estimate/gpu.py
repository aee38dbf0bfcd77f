"""GPU memory of one rank: model states (by ZeRO stage and offload), then the step's peak moment.

The peak is the largest of the moments a training step goes through, each a sum of named parts:

    forward    model states + gradients kept from earlier micro-batches + activations + logits/loss
    backward   the same with the loss's fp32 gradients (the usual peak)
    grads      a stage-1/2 gradient buffer appearing while every activation is still held (stage 0 has
               none: autograd makes each weight's gradient as backward frees its layer's activations;
               at stage 1 with several micro-batches a step, beside the weights' accumulated gradients)
    recompute  (checkpointing) one layer rebuilt with its gradients, late in backward
    backward end  (ZeRO-1/2, optimizer offloaded) the gradients DeepSpeed holds until backward ends,
               beside the last layer's activations (offload12.py)
    step       model states + gradients + the optimizer step's fp32 gradient copy
"""
from __future__ import annotations

from dataclasses import dataclass, field

from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.activations import (
    fused_logits_bytes,
    logits_bytes,
    model_bytes_per_token,
    recompute_bytes_per_token,
)
from zerotui.core.estimate import offload12
from zerotui.core.estimate.step_copy import copy_on_forward_pool
from zerotui.core.estimate.job import Job, largest_trainable, offload_keeps_gradients, persistent_params
from zerotui.core.estimate.margin import (
    copy_in_loss_blocks,
    first_step_term,
    fp16_offload_guard,
    loss_room_used,
    margin_terms,
    offload_norm_block,
    room_holes,
    sources,
    step_free,
    step_moment_term,
    zero3_long_sequence_floor,
)


@dataclass
class ModelStates:
    parts: dict[str, float] = field(default_factory=dict)
    grads: float = 0.0           # gradient storage while backward runs (freed by the step), 0 if in parts
    grads_early: bool = False    # allocated at the first reduced bucket: present while activations are
    step_transient: float = 0.0  # the optimizer step's fp32 gradient copy


@dataclass
class GpuPeak:
    parts: dict[str, float]      # model states + the peak moment's terms
    allocated: float             # their sum: torch.cuda.max_memory_allocated()
    margin: float                # reserved beyond allocated (fragmentation)
    phase: str                   # which moment is the peak
    margin_terms: dict[str, float] = field(default_factory=dict)  # its parts (margin.py)
    margin_sources: dict[str, float] = field(default_factory=dict)  # bytes each source churns (margin.py)
    step_room: float = 0.0       # allocation step 0's forward/backward freed before its optimizer step
    step_new: float = 0.0        # what that step creates: Adam's moments (if not there from the start), its fp32 copy
    moments: dict[str, float] = field(default_factory=dict)  # allocated at each moment of the step


def model_states(job: Job) -> ModelStates:
    """What DeepSpeed 0.19.8 allocates for weights, gradients and the optimizer on one GPU
    (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py, fp16/fused_optimizer.py)."""
    if job.stage == 0:
        return _stage0(job)
    if job.stage in (1, 2):
        return _stage12(job)
    return _stage3(job)


def _fp16_master(job: Job) -> bool:
    return job.p < 4  # fp32 training keeps a separate fp32 master copy too, measured 8 bytes/param


def _weights_label(job: Job) -> str:
    return "weights (4-bit base)" if job.quant_numel and job.plan.quant_bits == 4 else \
        "weights (8-bit base)" if job.quant_numel else "weights"


def _stage0(job: Job) -> ModelStates:
    p, psit = job.p, job.psit
    m = _fp16_master(job)
    return ModelStates({_weights_label(job): job.weight_bytes, "fp32 master": 4 * psit if m else 0,
                        "optimizer states": 8 * psit},
                       grads=p * psit, step_transient=8 * psit if m else 0)


def _stage12(job: Job) -> ModelStates:
    p, psit, N, b = job.p, job.psit, job.N, job.buckets
    buckets = (2 if job.plan.overlap_comm else 1) * p * b["reduce_bucket_size"]
    weights = {_weights_label(job): job.weight_bytes}
    if job.oo != "none":
        # offload_keeps_gradients: found on 1b-full-ho17/ho18 (ZeRO-1, optimizer on the CPU, 2 micro-batches
        # a step): 2.05 and 2.29 GiB more allocated than estimated without them, 8.7% and 12.4% short.
        accumulating = offload_keeps_gradients(job)
        return ModelStates({**weights,
                            "offload gradient staging": p * largest_trainable(job) + cal.OFFLOAD_GPU_EXTRA_BYTES,
                            "communication buckets": buckets},
                           grads=p * psit if accumulating else 0.0)
    return ModelStates({**weights, "fp32 master": 4 * psit / N, "optimizer states": 8 * psit / N,
                        "communication buckets": buckets},
                       grads=p * psit if job.stage == 1 else p * psit / N, grads_early=job.stage == 2,
                       step_transient=(6 if p < 4 else 4) * psit / N)


def _stage3(job: Job) -> ModelStates:
    p, psi, psit, N, b = job.p, job.psi, job.psit, job.N, job.buckets
    persistent = persistent_params(job.spec, b["stage3_param_persistence_threshold"])
    g: dict[str, float] = {}
    out = ModelStates(g)
    g[_weights_label(job)] = (job.weight_bytes / N + p * persistent * (1 - 1 / N) if job.op == "none"
                              else p * persistent)
    if job.oo == "none":
        g["gradients (partition)"] = p * psit / N
        g["fp32 master"] = 4 * psit / N
        g["optimizer states"] = 8 * psit / N
        out.step_transient = (6 if p < 4 else 4) * min(b["sub_group_size"], psit / N)
    else:
        g["offload gradient staging"] = cal.OFFLOAD_GPU_EXTRA_BYTES
    g["communication buckets"] = p * b["reduce_bucket_size"]
    gathered = min(b["stage3_max_live_parameters"], psi) * job.bytes_per_weight
    if job.op != "none":
        g["stage-3 working set"] = gathered
    elif N > 1:
        g["stage-3 working set"] = gathered * (1 - 1 / N)
    return out


def peak(job: Job, states: ModelStates) -> GpuPeak:
    """Model states plus the largest moment of a step (activations, logits, gradients, transients)."""
    plan, spec, p = job.plan, job.spec, job.p
    tokens = plan.micro_batch * plan.seq_len
    attention = "sdpa" if plan.attention == "flash" else plan.attention
    # ZeRO-3's linear keeps every input, frozen or not (activations.py); bitsandbytes' 4-bit layers do not
    # go through it (their matmul saves only the packed weight, bitsandbytes/autograd/_functions.py).
    zero3_linear = job.stage == 3 and not job.quant_numel
    saved = tokens * model_bytes_per_token(spec, p, attention, plan.seq_len, job.lora, plan.grad_ckpt, zero3_linear,
                                           liger=job.liger, fused_ce=job.fused_ce, masked=job.masked)
    lg = (fused_logits_bytes(tokens, spec.vocab_size, spec.hidden_size, p, head_trains=not plan.uses_adapters())
          if job.fused_ce else logits_bytes(tokens, spec.vocab_size, p))
    grads, step_transient = states.grads, states.step_transient
    grads_prev = grads if plan.grad_accum > 1 else 0.0
    phases: dict[str, dict[str, float]] = {
        "forward": {"gradients": grads_prev, "activations": saved, "logits/loss": lg["forward_peak"]},
        "backward": {"gradients": grads_prev, "activations": saved, "logits/loss": lg["backward_peak"]},
        "step": {"gradients": grads, "optimizer step (fp32 gradients)": step_transient},
    }
    # ZeRO-1/2 reduce into a flat buffer made at the first bucket, while nearly every activation is held.
    # Stage 0 has no such buffer: the 1.1B Liger plan (ZeRO-0, 16 x 1,024, one micro-batch a step) peaked
    # at 34.77 GiB allocated on both allocators, its forward; with its 2.05 GiB of gradients beside every
    # activation it would be 36.44 (speed-1b-kernels-2026-12-01, speed-alloc-1b-fit-2026-12-02).
    if grads and job.stage in (1, 2):
        phases["grads"] = {"gradients": grads, "activations": saved, "logits/loss": lg["grad_logits"]}
        if job.stage == 1 and job.oo == "none" and grads_prev:
            # ZeRO-1 keeps the micro-batches' 16-bit gradients on the weights until the boundary, and the
            # flat partition buffer appears beside them at its first bucket (1b-full-ho24's allocator
            # history, memsnap-1b-ho24-2026-12-04.txt: 1.96 GiB of weight gradients and the 2.05 GiB
            # buffer live at the peak, 0.98 GiB above the step the estimate had as the peak).
            phases["grads"]["gradients (flat partition)"] = p * job.psit / job.N
        elif job.stage == 2 and job.oo == "none" and grads_prev and plan.contiguous_gradients:
            # ZeRO-2 with contiguous gradients: each backward's first bucket makes a fresh flat partition
            # (stage_1_and_2.py copy_grads_in_partition, after _release_ipg_buffers dropped the last one)
            # while the weights' .grad still view the previous micro-batch's, which goes only when every
            # gradient has moved on. 1b-full-ho13's allocator history (2 x 4 x 2,048, no recompute;
            # memsnap-1b-ho13-2026-12-06.txt): two 2.05 GiB partitions live beside the activations at the
            # peak of allocated, 0.77 GiB above the loss's moment the estimate had as the peak.
            phases["grads"]["gradients (previous micro-batch's partition)"] = grads
    recompute = (tokens * recompute_bytes_per_token(spec, p, attention, plan.seq_len, job.lora, zero3_linear,
                                                    liger=job.liger, masked=job.masked) if plan.grad_ckpt else 0.0)
    if plan.grad_ckpt:
        phases["recompute"] = {"gradients": grads if states.grads_early else grads_prev, "activations": saved,
                               "activations (recomputed layer)": recompute}
    if "grads" in phases and job.fused_ce and spec.tied_embeddings and not plan.uses_adapters():
        # Liger's fused loss computes the head's gradient in forward. A tied head's gradient then waits in
        # autograd's buffer until the embedding's arrives at the end of backward, beside ZeRO's first
        # bucket. 1b128k-full-ho108's allocator history (memsnap-1b128k-ho108-2026-12-07.txt) has two
        # head-sized blocks from fused_linear_cross_entropy.py's grad_weight at that peak, and it, q1.5b-full-
        # ho44 and ho88 allocated 0.50-0.55 GiB more than the moment's sum: the head's 0.43-0.49 and the 0.05
        # every row shows. Counted at the recompute moment too (a rule tried 2026-12-05) it over-counted a
        # ZeRO-2 plan with the optimizer offloaded by 0.26 GiB (q1.5b-full-ho66), so it stays at this moment.
        phases["grads"]["tied head's gradient (until the embedding's)"] = p * spec.vocab_size * spec.hidden_size
    held = offload12.held_gradients(job)
    if held:
        last = ({"activations (recomputed layer)": recompute} if plan.grad_ckpt
                else {"activations (one layer)": saved / spec.num_layers})
        phases["backward end"] = {"gradients (held until backward ends)": held, **last}
    phase = max(phases, key=lambda k: sum(phases[k].values()))
    g = dict(states.parts)
    if job.quant_largest:  # a quantised weight is dequantised into the compute dtype for its matmul
        g["dequantisation buffer"] = p * job.quant_largest
    # What an optimizer step needs beside what its forward and backward freed (margin.first_step_term):
    # the fp32 gradient copy and Adam's moments. The rule was set on runs where the optimizer made the
    # moments at the first step; zerotui now makes them at start (core/train/optimizer_state.py). Run
    # that way (sweep 4, docs/estimator.md) 11 of 20 plans peaked within 0.1 GiB of where they had, but
    # with the moments left out of the rule 5 were estimated more than 3% short: the rule stands for the
    # holes of stage 1-2 as measured, so they stay in. DeepSpeed's stage-0 16-bit wrappers make them at
    # initialisation.
    adam_states = 0.0 if job.stage == 0 else states.parts.get("optimizer states", 0.0)
    busiest = max(sum(v.values()) for k, v in phases.items() if k != "step")
    step_room = max(0.0, busiest - states.grads)
    step_new = adam_states + states.step_transient
    for name, v in phases[phase].items():
        if v:
            g[name] = g.get(name, 0) + v
    allocated = sum(g.values())
    resident = allocated - sum(v for v in phases[phase].values())
    moments_alloc = {k: resident + sum(v.values()) for k, v in phases.items()}
    src = sources(job, g, lg, grads, recompute, step_transient)
    terms = margin_terms(src, job.expandable)
    free = step_free(job, allocated, moments_alloc["step"])
    terms["first step"] = 0.0 if copy_in_loss_blocks(job, src["loss"], src["first step"], free) else \
        first_step_term(job, step_room, step_new, room_holes(terms) + loss_room_used(src, job.expandable),
                        terms["first step"], src["first step"], free)
    terms["fp16 with the optimizer offloaded"] = fp16_offload_guard(job)
    terms["gradient norm (fp64, offload)"] = offload_norm_block(job)
    terms["long sequences (ZeRO-3)"] = zero3_long_sequence_floor(job, allocated, sum(terms.values()))
    terms["optimizer step's moment"] = step_moment_term(job, moments_alloc, phase, allocated,
                                                         sum(terms.values()))
    terms["the step's copy on forward's pool"] = max(
        0.0, copy_on_forward_pool(job, moments_alloc) - allocated - sum(terms.values()))
    terms[offload12.POOL] = offload12.init_floor(
        job, cal.CUDA_CONTEXT_BYTES, allocated, sum(terms.values()), terms["gradient norm (fp64, offload)"])
    return GpuPeak(g, allocated, sum(terms.values()), phase, terms, src, step_room, step_new, moments_alloc)
