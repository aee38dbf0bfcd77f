"""Reserved beyond allocated: what PyTorch's caching allocator holds on top of the predicted peak.

The allocator keeps freed blocks in their segments (a segment is one cudaMalloc, sized by the request
that made it, rounded to 2 MiB) and serves a later request only from a free block at least as large.
Resident tensors (weights, masters, Adam moments) are allocated once and never leave holes; what leaves
them is memory that is freed and asked for again at other sizes. The margin is a sum of those sources:

    base        the small-block pool, 2 MiB rounding and one-off workspaces of a process
    loss        the loss's fp32 blocks (4 bytes per logit each, or Liger's chunk blocks): few, huge, and
                freed while activations of other sizes are still live, so they cut the cache
                (ZeRO-3 adapters: the 16-bit logits the loss upcast and freed, loss_holes.py's ``freed_logits``)
    recompute   with checkpointing, each layer's activations and gradients are rebuilt in backward into
                whatever the freed blocks of the layer before left
    gather      ZeRO-3: each layer's weights are gathered into fresh blocks (from the CPU or peers)
    gradients   stage 0-2 gradients, allocated per weight in backward between activation blocks
    first step  the optimizer step's flat fp32 gradient copy (4 bytes per trainable element of the
                partition), when it is larger than any block the step could reuse: a new segment, on
                top of a cache that already holds the whole forward/backward (measured on sweep 1:
                reserved grew by that copy at the first step on the stage 0, 1 and 2 rows)

Each source but the base holds a share of the bytes it churns (``sources``); the first step's is 1 on
PyTorch's default allocator and less with expandable segments (below). The
loss and the gathers do not add up: a ZeRO-3 layer's gathered weights are served from the blocks the
loss freed, and the loss's blocks are rebuilt from what the gathers left, so the cache holds holes for
whichever churns more (the larger of the two terms). Fitted as a sum, three ZeRO-3 rows with offloaded
weights came out +9.8%, +10.0% and (out of sample) -12.7%; with the larger, +2.7%, +4.8% and +3.6%
(``python -m benchmarks.estimator.crossval_margin [--sum]``, docs/estimator.md, 2026-12-02).

With expandable segments the optimizer step's own moment is one more candidate for the peak
(``step_moment_term``): its allocation plus the hole DeepSpeed's flat copy of the 16-bit weights leaves
(``step_hole``). Where the step is the peak of allocation that candidate alone sets reserved; the terms
above describe forward and backward and do not add on top of it (2026-12-04: five step-peak plans held
out from the rule, Qwen2 and a 3B shape, ZeRO-0 to 2, came out within 0.1% of it; docs/estimator-log.md,
"The optimizer step's moment").

At ZeRO-0 in 16 bits with expandable segments, the loss's blocks are served from a free region that
DeepSpeed's FP16_Optimizer leaves at initialisation, and its holes shrink by that region
(``loss_room``; 2026-12-04, ninth session, from 1b-full-ho47's allocator history: +12.5% -> +0.6%).

One guard sits on top of the sum: ZeRO-3 with sequences longer than 2,048 tokens keeps at least a
quarter of the allocation as margin (``zero3_long_sequence_floor``). It is not one of the fitted sources:
a held-out row (7b-lora-ho6, one row of about 3,650 tokens a micro-batch) held 3.92 GiB beyond allocated,
26% of it, where the terms above predicted 1.63 GiB. With expandable segments the same plan held 2.8 GiB
less, so the holes were the caching allocator's; the floor applies only where the user's own
``PYTORCH_CUDA_ALLOC_CONF`` turns them off, and is still set from that one row.

A second guard, also set from one row: an fp16 full fine-tune with its optimizer on the CPU (1b-full-ho7,
held out for the CUDA-context rule, 2026-12-02) held 3.68 GiB beyond allocated where the sum gave 2.22,
and the budget promised 12.5% too little; the same plan in bf16 on the estimator's sweeps (at 2,048
tokens) held what the sum predicts. The extra 1.46 GiB is 0.71 of that run's 16-bit gradients, so fp16
plans with the optimizer offloaded at stage 1 or 2 (DeepSpeed's stage_1_and_2.py, the path measured) add
0.75 of their trainable gradient partition (``fp16_offload_guard``): LoRA's adapters make it negligible
(the 7B fp16 LoRA rows are unchanged). Stage 3 offloads through other code and has no fp16 row with large
gradients, so it gets no guard. The cause in DeepSpeed's fp16 offload path was not found.

Expandable segments. zerotui runs every plan with ``expandable_segments:True`` (core/plan/allocator.py;
QLoRA since its 7B pairs): segments grow in place, so a block freed at one size serves a request of
another and most holes never form. The 29 plans run that way through zerotui's worker (2026-12-02 and
-03) held 0.07-4.04 GiB beyond allocated where the default allocator's held up to 8.1 GiB, and they get their own base and shares
(calibration.py's EXPANDABLE_*: a base, the loss, gather and gradient shares, and a small recompute
share since 2026-12-04's tenth-session refit; calibration.py has each value's history). The first-step segment behaves differently by stage. It goes for bf16 at ZeRO stage 0 or 3,
the rows that showed it gone (and fp16 at stage 3 since 2026-12-05: ``gone_with_expandable``); an fp16 ZeRO-2 row (1b-full-ho8) and a bf16 one (ho13) still grew by the
whole copy; at stage 1 two full fine-tunes, bf16 and fp16 (ho12, ho14), grew by 2.0 GiB, the 4.1 GiB
copy less the 2.05 GiB of 16-bit gradients it is made from, and that is what 16-bit stage 1 gets (set
after both ran, from what is in effect one measurement: their step-phase peaks, set by the model states
alone, were identical to the byte; fp32 keeps the whole copy, unmeasured). The fp16 offload guard goes (its row's excess was the
default allocator's holes: 3.68 -> 1.55 GiB).

Where the first step goes with expandable segments (2026-12-03, from the per-phase figures of both
sweeps): torch creates Adam's moments at the first step, so step 0's forward and backward run without
them, and the step's new tensors (the moments and the fp32 gradient copy) land in what that backward freed
when they fit there. Every later step's activations then grow the segment by the moments' size, and the
steady margin is step 0's forward/backward holes alone (a-s2-mb8-ga2: 3.33 GiB of holes at step 0,
3.31 at the peak; v-s2-mb4-s2048 4.41 and 4.41). Where they did not fit, the step grew the segment
(w8-s2-mb4 by 16.2 GiB, b3-s2-mb2 by 25.9) and the first-step term stays. ``first_step_term`` decides
by what the step creates against what step 0 freed plus the margin's other terms, in the estimator's own
figures: on the 26 rows with phases and a first-step segment, 15 fit at 0.20-0.85 and 11 grew at
0.92-3.79 (calibration.py's EXPANDABLE_FIRST_STEP_ROOM_SHARE, 0.9, sits between; set before sweep 3's ten
held-out rows, which it called right). With the first step gone from the rows that fit, the fit
found stages 1-2's holes larger than the loss term alone gives, and took a gradient share of 0.25
(0.75 after the refit that followed counting offload_norm_block, 0.5 since step_moment_term).
Where the step does grow the segment, the whole copy overstated what is left at the peak: the copy is
freed after the step, the segment keeps its pages, and later steps' activations are served from them
(sweep 4, with Adam's state made at start, showed the pool's growth at the first step taken back by
later peaks). The term is a share of the copy (calibration.py's EXPANDABLE_FIRST_STEP_SHARE, 0.4,
fitted with the others; docs/estimator.md has what it did out of sample).

The shares are fitted in benchmarks/estimator/fit_margin.py on every committed H200 row and judged out
of sample by benchmarks/estimator/crossval_margin.py (each result file predicted by a fit that did not
see it), one fit per allocator; docs/estimator.md has both.
"""
from __future__ import annotations

from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.job import largest_trainable
from zerotui.core.estimate.loss_holes import FREED_LOGITS, freed_logits, loss_hole_weight

#: c10's CUDACachingAllocator: requests up to 10 MiB share 20 MiB segments; larger ones get their own
#: segment (rounded to 2 MiB) when no cached block is large enough.
MIN_LARGE_ALLOC = 10 * 2**20
#: DeepSpeed's stage3.py takes a gradient's fp64 norm in chunks of this many elements (_constant_buffered_norm2).
NORM_CHUNK = 250_000_000


def largest_transient_block(job, lg: dict[str, float], gathered: float) -> float:
    """The largest block that is freed before the optimizer step and could serve one of its tensors."""
    plan, spec, p = job.plan, job.spec, job.p
    tokens = plan.micro_batch * plan.seq_len
    return max(loss_block(job, lg), p * tokens * spec.intermediate_size, p * job.quant_largest, gathered)


def first_step_bytes(job, lg: dict[str, float], step_transient: float, gathered: float) -> float:
    """A new segment for the step's flat fp32 gradient copy, when no freed block can hold it. With
    expandable segments it goes where it was measured gone, bf16 at stage 0 or 3, and is smaller at
    stage 1 (module docstring, "Expandable segments"). Not gone where the step itself is the peak: the
    bf16 ZeRO-0 recompute plans of 2026-12-03's seventh session grew the pool by the whole 4.1 GiB copy at
    the step (memsnap-1b-stage0-step-2026-12-03.txt); step_moment_term covers those rows since
    2026-12-04 (docs/estimator-log.md, "The optimizer step's moment")."""
    if not step_transient or (job.expandable and gone_with_expandable(job)):
        return 0.0
    if job.stage == 3:
        block = 4.0 * min(job.buckets["sub_group_size"], job.psit / job.N)  # one sub-group at a time
    elif job.expandable and job.stage == 1 and job.p < 4:
        # measured (1b-full-ho12 bf16, ho14 fp16): the segment grows by the copy less the 16-bit gradients
        # it is made from, which are freed into it. fp32 (no 16-bit gradients) was not measured: whole copy.
        block = (4.0 - job.p) * job.psit / job.N
    else:
        block = 4.0 * job.psit / job.N
    if block <= MIN_LARGE_ALLOC:  # carved out of a shared 20 MiB segment: part of "base"
        return 0.0
    return block if block > largest_transient_block(job, lg, gathered) else 0.0


def gone_with_expandable(job) -> bool:
    """Where the expandable pool was measured to take the step's fp32 gradient copy without growing: bf16
    at stages 0 and 3, and fp16 at stage 3 (1b-full-fp16-z3, 2026-12-05: 1.33 GiB beyond allocated at
    the step where the copy is 3.73; the bf16 plan of the same shape, 1b-full-ho9, held 0.68). Stage 3
    makes the copy one sub-group at a time and frees it before the next, in either 16-bit precision.
    fp16 at stage 0 was not measured (its full fine-tunes ran at stages 1-3): the copy is kept there."""
    return job.stage == 3 and job.plan.precision in ("bf16", "fp16") or (
        job.stage == 0 and job.plan.precision == "bf16")


def loss_room_used(src: dict[str, float], expandable: bool) -> float:
    """What ``loss_room`` took off the margin's loss and gather terms. It goes back into the first step's
    holes (``room_holes``): the region is free again when the optimizer step runs."""
    _, loss, _, gather, _, _ = shares(expandable)
    full, g = loss * src["loss"] + src.get(FREED_LOGITS, 0.0), gather * src["gather"]
    return max(full, g) - max(max(0.0, full - src.get("loss room", 0.0)), g)


def room_holes(terms: dict[str, float]) -> float:
    """The margin's holes that count as room for the first step's tensors: every term but the first step
    (the base too: without it the held-out 1b-full-ho21 was called wrong, docs/estimator.md)."""
    return sum(terms.values()) - terms["first step"]


def first_step_share(room: float, new: float, holes: float) -> float:
    """What the first step creates as a share of what step 0 freed (``first_step_term``)."""
    return new / (room + holes) if room + holes > 0 else float("inf")


def first_step_term(job, room: float, new: float, holes: float, term: float, copy: float = float("inf"),
                    free: float = 0.0) -> float:
    """The first-step segment's part of the margin (``term``: its share of the fp32 copy). With expandable
    segments the first optimizer step's new tensors (Adam's moments and the fp32 gradient copy: ``new``)
    go first into what step 0's forward and backward freed (``room``, the allocation, plus the ``holes``
    of the margin's other terms, ``room_holes``; EXPANDABLE_FIRST_STEP_ROOM_SHARE of it), and the segment
    grows only by what is left over; the copy's hole lies in that growth, so the share applies to the
    smaller of the copy and the excess (2026-12-06, twenty-third session: held out +3.2%, +1.8%, +6.5%,
    +3.2%; docs/estimator-log.md, "The first step's excess" and "ho82, and where ho81's margin goes").
    Nor can the growth be larger than the ``copy`` less what the pool has ``free`` at the step: the busiest
    moment of forward and backward less the step's (``step_free``). ho81 grew nothing at its step with 3.36
    GiB free for a 4.60 GiB copy (memsnap-1b128k-ho81-2026-12-06.txt), ho46 held 0.28 GiB beyond allocated
    with 5.92 free; 2026-12-06, twenty-sixth session, docs/estimator-log.md, "What the pool has free at the step"."""
    if not job.expandable:
        return term
    excess = max(0.0, new - cal.EXPANDABLE_FIRST_STEP_ROOM_SHARE * (room + holes))
    return min(term, cal.EXPANDABLE_FIRST_STEP_SHARE * min(excess, max(0.0, copy - free)))


def step_free(job, allocated: float, step: float) -> float:
    """What the pool has free at the optimizer step: the forward/backward peak's allocation less the step's
    (``first_step_term``). Not at ZeRO-2 with accumulation, whose step leaves more holes (``step_hole``'s
    second one; 1b-full-ho13's step grew the pool with 2.70 GiB of it free)."""
    if not job.expandable or (job.stage == 2 and job.plan.grad_accum > 1):
        return 0.0
    return max(0.0, allocated - step)


def copy_in_loss_blocks(job, loss: float, copy: float, free: float) -> bool:
    """Whether the first step's fp32 copy (less what the pool has ``free`` then) fits where the ``loss``'s
    blocks were: allocated one after another at the end of forward and freed in backward, they leave one
    free range, and with Adam's moments made at start the copy is the step's only new tensor, so it adds
    no segment. From 7b-l8-full-ho90's allocator history (memsnap-7b-l8-ho90-2026-12-06.txt: three 3.91 GiB
    loss blocks, a 7.01 GiB copy, the pool last grown in backward); two ZeRO-2 plans held out from it came
    out +0.4% and +1.0%, +6.9% and +5.4% without it (docs/estimator-log.md, "The loss's blocks at the step")."""
    return job.expandable and job.states_at_start and copy - free <= loss


def sources(job, g: dict[str, float], lg: dict[str, float], grads: float, recompute: float,
            step_transient: float) -> dict[str, float]:
    """The bytes each source churns, before its share (the fit's features): the module docstring. The
    loss's are weighted by ``loss_hole_weight``. Not a feature: "loss room", the free region the loss's
    blocks are served from (``loss_room``)."""
    gathered = g.get("stage-3 working set", 0.0)
    freed = freed_logits(job)
    loss = 0.0 if freed else (
        (lg["forward_peak"] - lg["kept"] if job.fused_ce else lg["backward_peak"]) * loss_hole_weight(job))
    return {"loss": loss, "recompute": recompute, "gather": gathered, "gradients": gradient_churn(job, grads),
            "first step": first_step_bytes(job, lg, step_transient, gathered), "loss room": loss_room(job, lg),
            FREED_LOGITS: freed}


def gradient_churn(job, grads: float) -> float:
    """The gradients' bytes as a source of holes: none where the optimizer is offloaded. There the only
    16-bit gradients the GPU holds are ZeRO-1's between accumulation boundaries (job.offload_keeps_gradients),
    and 1b-full-ho18's allocator history (memsnap-1b-ho18-2026-12-03.txt) shows no holes beside them. The
    share they had put ho18, ho35 (three runs), q1.5b-full-ho65 and ho68 at +6.4% ... +14.3%. Dropping it
    was refuted on 2026-12-03 and -05 (ho34, ho64 and ho68 went up to 9.2% short), but those rows' peak is
    now initialisation's pool (offload12.init_floor, from the nineteenth session), and without the share
    they are at -0.6% and the other five at -0.1% ... +5.3% (2026-12-06, twenty-second session). Measured
    with expandable segments only: PyTorch's default allocator keeps the share (it has no such row)."""
    return 0.0 if job.oo != "none" and job.expandable else grads


def loss_block(job, lg: dict[str, float]) -> float:
    """The loss's largest block: one fp32 copy of the logits, or Liger's chunk blocks."""
    tokens = job.plan.micro_batch * job.plan.seq_len
    return lg["forward_peak"] - lg["kept"] if job.fused_ce else 4.0 * tokens * job.spec.vocab_size


def loss_room(job, lg: dict[str, float]) -> float:
    """With expandable segments, a free region DeepSpeed's initialisation leaves that the loss's blocks
    are served from instead of growing the pool: at ZeRO-0 in 16 bits, DeepSpeed's FP16_Optimizer
    (fused_optimizer.py, initialize_optimizer_states) gives the flat fp32 master weights zero gradients
    of 4 bytes per trainable weight, runs one optimizer step to make Adam's moments and frees them. The
    allocator's history of 1b-full-ho47 (bf16 ZeRO-0, 16 x 2,048 tokens, recompute;
    memsnap-1b-ho47-2026-12-04.txt) has 8.2 GiB free when training starts (that region, the weights'
    clones and their originals) and the backward's 3.9 GiB loss blocks served from it: 0.98 GiB held
    beyond allocated where the loss term gave 4.1. Its ZeRO-2 twin (ho48, memsnap-1b-ho48-2026-12-04.txt)
    grew the pool for them and held 4.79: at stages 1-2 DeepSpeed's own zero gradients are freed before
    zerotui's worker makes Adam's moments (core/train/optimizer_state.py), which take the region (the
    sweeps' harness made them at the first step, and its ZeRO-2 run of that plan held 3.03 where
    the worker's held 4.79). The room counts only where one loss block fits in it, so it is a step, not
    a slope: past that edge (a 1.1B plan at 16 x 2,176 tokens) the whole loss term comes back, and no run
    has been measured there. Adapters' region is too small for any block (ZeRO-3 and fp32 make none)."""
    if not job.expandable or job.stage != 0 or job.p == 4:
        return 0.0
    room = 4.0 * job.psit
    return room if loss_block(job, lg) <= room else 0.0


def combine(src: dict[str, float], base: float, loss: float, recompute: float, gather: float,
            gradients: float, first_step: float) -> dict[str, float]:
    """The margin's parts (their sum is the margin) from the sources and the shares. The gathers add
    only what their holes exceed the loss's (module docstring); the loss's holes less the room its
    blocks are served from (``loss_room``)."""
    held = loss * src["loss"] + src.get(FREED_LOGITS, 0.0)
    loss_b, gather_b = max(0.0, held - src.get("loss room", 0.0)), gather * src["gather"]
    return {"base": base, "loss": loss_b, "recompute": recompute * src["recompute"],
            "gather": max(0.0, gather_b - loss_b), "gradients": gradients * src["gradients"],
            "first step": first_step * src["first step"]}


def shares(expandable: bool) -> tuple[float, float, float, float, float, float]:
    """calibration.py's base and five shares for the allocator the run has."""
    if expandable:
        return (float(cal.EXPANDABLE_BASE_BYTES), cal.EXPANDABLE_LOSS_SHARE, cal.EXPANDABLE_RECOMPUTE_SHARE,
                cal.EXPANDABLE_GATHER_SHARE, cal.EXPANDABLE_GRADIENT_SHARE, cal.EXPANDABLE_FIRST_STEP_SHARE)
    return (float(cal.FRAGMENTATION_BASE_BYTES), cal.FRAGMENTATION_LOSS_SHARE, cal.FRAGMENTATION_RECOMPUTE_SHARE,
            cal.FRAGMENTATION_GATHER_SHARE, cal.FRAGMENTATION_GRADIENT_SHARE, cal.FRAGMENTATION_FIRST_STEP_SHARE)


def margin_terms(src: dict[str, float], expandable: bool = False) -> dict[str, float]:
    return combine(src, *shares(expandable))  # with calibration.py's shares for the run's allocator


def fp16_offload_guard(job) -> float:
    """fp16 with a stage 1-2 ZeRO optimizer on the CPU, on PyTorch's default allocator: a share of the
    trainable 16-bit gradient partition on top of the sum (the module docstring), else 0. Stage 3 (other
    code, stage3.py) was not measured in fp16 with large gradients: no guard there."""
    if job.plan.precision != "fp16" or job.oo == "none" or job.stage not in (1, 2) or job.expandable:
        return 0.0
    return cal.FP16_OFFLOAD_GRADIENT_SHARE * job.p * job.psit / job.N


def offload_norm_block(job) -> float:
    """ZeRO-1/2 with the optimizer on the CPU: DeepSpeed 0.19.8 takes each gradient's norm on the GPU in
    float64 before copying it to the host (stage_1_and_2.py, copy_grads_in_partition ->
    set_norm_for_param_grad_in_gpu: ``.to(get_norm_dtype()).norm(2)``, fp64 where the device has it), one
    parameter at a time, from backward's reduce hooks at the accumulation boundary: a transient of 8
    bytes per element of the largest trainable gradient slice in the partition. It needs one contiguous
    block, which the pool's holes did not hold. The Qwen2 full fine-tunes (2026-12-03, sixth session)
    each asked the allocator for one 1,866,989,568-byte block, 8 x their 151,936 x 1,536 embedding
    (benchmarks/memsnap's replay of the allocator history): the tied run's pool grew by it after step 0's
    backward, the untied run asked inside backward with 19.93 GiB allocated and went over its cap. Their
    traces had no Python stacks; 1b-full-ho18's (seventh session, memsnap-1b-ho18-2026-12-03.txt) names
    the call site, set_norm_for_param_grad_in_gpu from copy_grads_in_partition, with its 0.49 GiB block
    inside the allocation peak, not beyond it (the total is the same; the margin carries it).
    Without offload DeepSpeed also casts each gradient to fp64 for the norm, but in the optimizer step
    (get_grad_norm_direct), where the rows measured show no such block: not counted there. Counted whole,
    with no share: 0.49 GiB for a 1.1B Llama, none for adapters (their tensors are small).
    ZeRO-3 with the optimizer offloaded takes the same norm, of each parameter's gradient partition, at the
    accumulation boundary (stage3.py, _offload_grad_partition_at_boundary -> _constant_buffered_norm2: fp64,
    at most 250M elements a chunk), 8 bytes per element again. It also makes a 16-bit GPU copy of the
    partition first; counting that too (10 bytes) put the 1.1B rows at +4.9% and +5.2% where 8 bytes put
    them at +3.6% and +3.9%, so only the fp64 chunk is counted. Counted where the weights stay on the GPU;
    with them offloaded too, the gathers' holes (the gather term) held it on every row measured (ho5, ho15
    and the sweeps' two: within the band without it, w8-s3-cpu2-mb4-ckpt +15% with it). Taken on 2026-12-06
    (twenty-second session) with the loss weight at stage 3 (loss_holes.py's ``loss_hole_weighted``), from the 7B full
    fine-tunes on a 24 GiB cap, -2.1% ... -2.8% without it. Only with expandable segments: on PyTorch's
    default allocator the loss's larger holes held it (1b-full-ho4 +1.7% without it, +6.9% with it)."""
    if job.oo == "none":
        return 0.0
    if job.stage == 3:
        if job.op != "none" or not job.expandable:
            return 0.0
        block = 8.0 * min(largest_trainable(job) / job.N, NORM_CHUNK)
    elif job.stage in (1, 2):
        block = 8.0 * min(largest_trainable(job), job.psit / job.N)
    else:
        return 0.0
    return block if block > MIN_LARGE_ALLOC else 0.0


def step_hole(job) -> float:
    """With expandable segments, the free room the optimizer step's flat blocks cannot use: DeepSpeed's
    16-bit optimizer wrappers copy the trainable 16-bit weights into one flat buffer at initialisation
    and free the originals, which leaves a hole of that size low in the pool (the ZeRO-0 trace,
    memsnap-1b-stage0-step-2026-12-03.txt: the model's 2.05 GiB freed at fused_optimizer.py:94, the
    pool then 8.2 GiB above what was allocated). Forward and backward fill such holes with blocks of
    every size; the step asks for a few flat blocks of 2-4 bytes per weight at once, which it cannot.
    On sixteen worker rows (thirteen plans) whose peak was the step (1.1B and Qwen2-1.5B shapes,
    ZeRO-0, 1 and 2, bf16 and fp16, recompute, fused kernels or none), reserved beyond allocated was
    this hole less 0.04-0.06 GiB, and twice it at ZeRO-2 with more than one micro-batch a step (why was
    not traced); five plans held out from it, a 3B shape among them, came within 0.1%, and a 3B ZeRO-1
    plan under a cap that did not bind (3b-full-mb1-ho104, +0.2%). Its history (memsnap-3b-ho104-2026-12-07.txt)
    has the step's fp32 copy grow the pool by its whole size on top of the weights, their hole and the
    gradient partition: the same sum here, because forward fit in the hole. Where forward outgrew it by
    less than the copy (3b-full-fit80, 2b-49k-full-ho105) the pool before the copy was larger, and
    step_copy.py's guard counts it. DeepSpeed's
    stages 1-2 keep every 16-bit weight on every rank, so the hole is not divided by the GPUs, nor is
    ZeRO-2's second one (a guess on the safe side: one GPU measured). Optimizer on the CPU, ZeRO-3 and
    adapters step otherwise, and fp32 has no 16-bit copy (nor a measurement): 0 there."""
    if (not job.expandable or job.stage == 3 or job.oo != "none" or job.plan.uses_adapters()
            or job.p == 4):
        return 0.0
    return (2.0 if job.stage == 2 and job.plan.grad_accum > 1 else 1.0) * job.p * job.psit


def step_moment_term(job, moments: dict[str, float], phase: str, allocated: float, margin: float) -> float:
    """The optimizer step's moment in the peak of reserved, as what to add to ``margin``. Where the step
    is the peak of allocation (``phase``), its own moment sets the peak of reserved: its allocation plus
    ``step_hole``, not the forward/backward terms on top of it (negative where those are larger: the
    held-out 1b-full-ho41 and ho42 held 2.0 GiB beyond allocated where those terms gave 3.8 and 4.6).
    Elsewhere the step's moment is one more candidate beside the busiest forward/backward moment and
    its terms, and the larger of the two is the peak. That branch is reasoning, not measurement: on no
    committed row does the step's moment exceed the busiest moment with its terms."""
    hole = step_hole(job)
    if not hole or "step" not in moments:
        return 0.0
    step = moments["step"] + hole
    if phase == "step":
        return step - allocated - margin
    return max(0.0, step - allocated - margin)


def zero3_long_sequence_floor(job, allocated: float, margin: float) -> float:
    """What raises ``margin`` to the ZeRO-3 long-sequence floor (the module docstring), else 0. A run
    with expandable segments (zerotui's setting for these plans, whatever the method) needs none."""
    if job.stage != 3 or job.plan.seq_len <= cal.ZERO3_LONG_SEQUENCE_TOKENS or job.expandable:
        return 0.0
    return max(0.0, cal.ZERO3_LONG_SEQUENCE_MARGIN_SHARE * allocated - margin)
