"""Which bytes of the loss count as holes in the allocator's pool (core/estimate/margin.py ``sources``):
the share of the loss's fp32 bytes for most plans (``loss_hole_weight``), and for ZeRO-3 adapters the 16-bit
logits the loss upcast and freed (``freed_logits``). Each function's docstring has the rows and allocator
histories it rests on."""
from __future__ import annotations

from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.job import offload_keeps_gradients


#: The source ``freed_logits`` fills: bytes, held as they are (no fitted share).
FREED_LOGITS = "freed 16-bit logits"


def freed_logits(job) -> float:
    """ZeRO-3 adapters with expandable segments: the loss's holes are the 16-bit logits, once per
    micro-batch a step up to ``freed_logits_holes``, in place of the share of the loss's fp32 bytes the
    other plans get.
    Their allocator histories (2026-12-07, thirty-first session; memsnap-z3-adapters-2026-12-07.txt) show
    the fp32 blocks (the upcast, its log-softmax, their gradients) live at the peak of allocated and the
    largest hole the head's 16-bit output, freed once the loss has upcast it: 1.957 of 2.111 GiB of holes
    (1b128k-lora-s3-ho96), 0.979 of 1.126 (3b-qlora-s3-ho97), 0.750 of 1.071 (2b-49k-lora-ho91), 0.488 of
    0.655 (1b-lora-fp16-ovf-s3). Those traces end in the first micro-batch's backward. Over whole runs the
    plans with one micro-batch a step held what the trace shows (and so did the two held out from the
    rule with one, 3b-qlora-s3-mb4-ho99 +0.3% and 1b128k-lora-fp16-s3-ho100 +0.5%, thirty-second
    session); QLoRA and fp16 plans with two or more held about a second such hole: ho97 2.11 GiB and the
    1.1B fp16 pair 1.11-1.19, the four 7B and 13B seed plans with eight micro-batches 0.43-0.50 (two holes
    of 0.12 and the same 0.13-0.25 GiB beyond them as the others), not eight; bf16 LoRA held one
    (``freed_logits_holes``). Not with fused cross-entropy (no full logits) or fp32 (no upcast). The
    fifth history, 7b-lora-ho6 (the optimizer on the CPU, one row of about 3,700 tokens a micro-batch),
    held 0.53 GiB of holes that DeepSpeed's partitioning left at initialisation beside its logits' 0.24;
    that source is not modelled (with the refit's 0.1 GiB base the row is 2.8% short)."""
    if not (job.expandable and job.stage == 3 and job.plan.uses_adapters() and job.p == 2 and not job.fused_ce):
        return 0.0
    logits = job.plan.micro_batch * job.plan.seq_len * job.spec.vocab_size * job.p
    return min(job.plan.grad_accum, freed_logits_holes(job)) * float(logits)


def freed_logits_holes(job) -> int:
    """How many micro-batches' logits ``freed_logits`` counts at most: two for QLoRA and for fp16, one
    for LoRA in bf16. The rows with two or more micro-batches a step that tell one hole from two: QLoRA
    held two (3b-qlora-s3-ho97 in bf16, 2.11 GiB beyond allocated with 0.98 GiB logits; the 1.1B QLoRA
    fp16 pair 1.11 with 0.49), LoRA in fp16 two (the 1.1B pair, 1.19 with 0.49), and LoRA in bf16 one:
    1b128k-lora-s3-ga4-ho98, held out from the cap at two (2026-12-07, thirty-second session), held 1.10
    GiB with 0.98 GiB logits, its total 9.6% under the estimate with two; 1b128k-lora-s3-ga2-ho101, held
    out from this split with one hole predicted (11.58 GiB in all; two would be 12.56), measured 11.46
    and held 1.10 (estimator-bf16-lora-one-hole-predictions-2026-12-07.txt). Held out on a second shape
    (thirty-third session, Qwen2 1.5B, 152k vocabulary, 1.16 GiB logits, 2 x 2 x 2,048): bf16 LoRA
    q1.5b-lora-s3-ga2-ho102 held 1.28 GiB, QLoRA q1.5b-qlora-s3-ga2-ho103 2.40, +0.9% and +1.0%
    (estimator-q15b-holes-predictions-2026-12-07.txt). Why the second hole comes with QLoRA's
    dequantisation or fp16 was not traced: the allocator histories end in the first micro-batch's
    backward."""
    return 2 if job.plan.method == "qlora" or job.plan.precision == "fp16" else 1


def loss_hole_weight(job) -> float:
    """The share of the loss's bytes that counts as churn (``sources``): with expandable segments, plans
    whose backward makes no large gradient store on the GPU leave fewer holes for them than full
    fine-tunes that do (``loss_hole_weighted``; calibration.py's EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT,
    with the rows it comes from); 1 elsewhere."""
    return cal.EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT if loss_hole_weighted(job) else 1.0


def loss_hole_weighted(job) -> bool:
    """Whether ``loss_hole_weight`` applies, with expandable segments: adapters at ZeRO stages 0-2 (their
    gradients are small), and full fine-tunes at ZeRO-1/2 with the optimizer offloaded where DeepSpeed
    copies each gradient to the host as backward reduces it and frees it (``offload_keeps_gradients``
    false: stage 2, and stage 1 with one micro-batch a step and overlap_comm). Full fine-tunes elsewhere
    keep 16-bit gradients made during backward: every weight's at stage 0 and at stage 1 between
    accumulation boundaries, and at stage 2 the partition's flat buffer (``grads_in_partition``), made
    inside step 0's backward. ZeRO-3 full fine-tunes make none: DeepSpeed's stage3.py allocates every
    gradient partition at initialisation (grad_partitions_flat_buffer, on the GPU or pinned on the host)
    and backward copies each gradient into it and frees it (partition_grads). Taken on 2026-12-06
    (twenty-second session): the 128k vocabulary's ZeRO-3 recompute plans (ho56, ho57, and the sweeps'
    b3-s3-mb4-ckpt and v-s3-mb2-s4096-ckpt as sweep 4 ran them) held 2.0-2.1 GiB beyond allocated where the
    loss term gave 4.1, the one hole ho56's allocator history shows at the peak being its freed 16-bit
    logits (memsnap-1b128k-ho56-2026-12-04.txt). ZeRO-3 adapters in 16 bits count their freed 16-bit
    logits instead (``freed_logits``); in fp32 they keep the weight 1. fp16 full fine-tunes keep it too, on
    the safe side: their one row
    with a large loss term (the sweep's v-s3-fp16-mb4) would go 5.1% short. That row ran DeepSpeed's own
    overflow check, which copies the whole gradient partition at each step on the reduce stream, where
    zerotui's worker runs core/train/overflow_check.py; the worker's three fp16 ZeRO-3 full fine-tunes are
    within the band with the weight or without it (-1.9% ... +1.0%, -0.7% ... +2.0%)."""
    if not job.expandable:
        return False
    if job.stage == 3:
        return not job.plan.uses_adapters() and job.plan.precision == "bf16"
    if job.plan.uses_adapters():
        return True
    return job.stage in (1, 2) and job.oo != "none" and not offload_keeps_gradients(job)
