"""The caching allocator's margin (core/estimate/margin.py) against every committed H200 row: the seed
and held-out scenarios, the sweeps' fresh-worker rows and the speed rows (benchmarks/estimator/
margin_rows.py), and the fit that chose its constants (benchmarks/estimator/fit_margin.py)."""
from __future__ import annotations

from places import REPO
import sys

import pytest

from zerotui.core.estimate import gpu
from zerotui.core.estimate.margin import shares
from zerotui.core.estimate.job import job_for
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.model.spec import _llama_family_spec
from zerotui.core.plan.schema import Plan

from estimate_shared import box_80g

GIB = 2**30


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    sys.path.insert(0, str(REPO))
    from benchmarks.estimator.margin_rows import all_rows

    return all_rows()


def test_no_committed_row_measured_more_than_3pct_above_its_estimate(rows):
    """What must fit (allocated + margin + CUDA context) against what each run took (NVML's peak where it
    saw the run alone, else PyTorch's peak reserved plus the assumed context): never more than 3% short,
    on every committed row of every kind. The ZeRO-3 long-sequence rows count with their floor. The
    held-out Qwen2.5-1.5B full fine-tune broke it (-5.3%) until DeepSpeed's fp64 gradient norm with the
    optimizer on the CPU was counted (margin.offload_norm_block, 2026-12-03, sixth session): -0.05% now."""
    from benchmarks.estimator.margin_table import total_error

    assert len(rows) >= 41
    assert {r["source"] for r in rows} == {"seed", "sweep1", "sweep2", "sweep3", "sweep4", "speed"}
    short = {r["id"]: total_error(r) for r in rows if total_error(r) < -0.03}
    assert not short, short
    qwen = [total_error(r) for r in rows if r["id"].startswith("q1.5b-full-fit")]
    assert len(qwen) == 2 and all(-0.03 <= e <= 0.05 for e in qwen)


def test_allocated_bytes_within_2pct_on_every_seed_row(rows):
    """The allocated part of the estimate on the runs through zerotui's worker, Liger's included: the four
    Liger rows whose peak is the checkpoint-recompute moment were 3-6% high before its SwiGLU backward was
    counted as writing into its inputs (activations.recompute_bytes_per_token). Every row was within
    1.5% until a new plan, 7b-lora-fit at micro-batch 16 (seed-scenarios-expandable-c), came in at +1.6%.
    Two held-out rows of 2026-12-03 missed (docs/estimator.md): 1b-full-ho13 (bf16 ZeRO-2, no recompute,
    2 x 2,048 tokens, 4 a step) allocated 0.77 GiB (3.0%) more than predicted, three runs to the byte,
    until its allocator history (2026-12-06, twenty-ninth session) showed the previous micro-batch's
    gradient partition live beside the new one at the backward's first bucket (gpu.peak's grads moment):
    +0.2% now;
    1b-full-ho15 (ZeRO-3, weights on the CPU, Liger, 4 x 4,096 tokens) 0.62 GiB (7.1%) less, until the
    ninth session found its rows were about 3,650 tokens, not 4,096 (benchmarks/seed_scenarios/data.py's
    ran_seq_len): estimated for the width that ran, it is within 2%. A third,
    held out for the first-step share (2026-12-03, sixth session), like ho13 without recompute at 2 x
    2,048 tokens a micro-batch and 4 a step: 1b-full-ho24 (bf16 ZeRO-1, Liger) allocated 0.98 GiB (4.2%)
    more than predicted until its allocator history (2026-12-04) showed ZeRO-1's flat gradient partition
    beside the weights' accumulated gradients (gpu.peak's grads moment): within 0.3% now, and the two
    plans held out from that (ho44, ho46) within 1.5%; ho13 ran a third time (share-a) to the byte. Held out from the refit that
    followed (refit-a/-b): 1b-full-ho26 (bf16 ZeRO-2, optimizer on the CPU, 4 x 2 x 2,048, no recompute)
    allocated 2.8% more (the same pattern, or the fp64 norm block landing on the allocation peak; the
    margin counts it and the total is exact), and the untied Qwen2 twin as `fit` now picks it (16 x 1 x
    2,048, recompute) 2.7% less. Held out on 2026-12-03 (seventh session, zero1-a): q1.5b-full-ho34 (bf16
    ZeRO-1, optimizer on the CPU, 4 x 4 x 2,048, recompute) allocated 0.39 GiB (4.9%) more, cause not
    found (one candidate: ho18's allocator history has DeepSpeed's fp64 norm block inside the allocation
    peak, which the estimator counts in the margin; for Qwen2 that block is 1.74 GiB, not 0.39).
    Held out on 2026-12-05 (fifteenth session, tied-a): ho34's untied twin (q1.5bu-full-ho64) allocated
    1.00 GiB (10.5%) more, about the gradients of its two 151,936-row matrices (0.43 GiB each); the
    margin's gradient share covers it (total +2.6%). ho34's 0.39 GiB is about its tied head's gradient,
    which autograd holds through backward (0.43 GiB); a rule counting that was tried on held-out plans
    the same day and not shipped (docs/estimator.md).
    Held out on 2026-12-04 (twelfth session, cards-i): a LoRA on all linear layers at 4 x 8,192 tokens
    whose padded micro-batches still had a mask allocated 0.52 GiB (5.4%) more than counted with the
    mask: its allocator history has the recomputed layer's attention backward holding more than the
    estimate's in-flight gradients; the total is -1.2%.
    Over on 2026-12-05 (nineteenth session): ZeRO-1/2 offload plans whose peak is offload12's "backward
    end" (ho69-ho72) count every gradient larger than the bucket and a whole recomputed layer, 0.2-0.4 GiB
    more than held (ho71 and ho72 peaked at initialisation, two copies of the weights); their totals come
    from initialisation's pool, +0.8% and +0.9% (test_offload12_rows_come_from_the_pool). The moment took
    q1.5bu-full-fit's allocation from 2.7% under to 6.0% over (its total +1.2%)."""
    errs = {r["id"]: r["allocated_est"] / r["allocated"] - 1 for r in rows if r["source"] == "seed"}
    named = {"1b-full-ho26 (refit-b)": (-0.035, -0.02), "q1.5bu-full-fit (refit-a)": (0.055, 0.065),
             "q1.5b-full-ho34 (zero1-a)": (-0.055, -0.04), "q1.5bu-full-ho64 (tied-a)": (-0.11, -0.10),
             # masked micro-batches (run.py ran_masked): the mask and repeated keys/values are counted,
             # 0.52 GiB more of the recomputed layer's attention backward is not (twelfth session)
             "1b128k-lora-fit16-s8192 (cards-i)": (-0.06, -0.045),
             "1b-full-ho69 (memsnap-ho69-h100)": (0.04, 0.05), "1b-full-ho70 (offload12-h100)": (0.08, 0.09),
             "1b-full-ho71 (offload12-h100)": (0.10, 0.11), "1b-full-ho72 (offload12-h100)": (0.07, 0.08),
             # the optimizer on the CPU with accumulation, for the speed model (thirty-fourth session): at 4 x 1
             # the same "backward end" over-count on the 7B-wide shape, 0.94 GiB; at 1 x 4 0.23 GiB short, cause
             # not traced; both totals +0.5% (initialisation's pool)
             "7b-l8-full-oga1 (oga-7b-l8-h100)": (0.12, 0.13), "7b-l8-full-oga4 (oga-7b-l8-h100)": (-0.03, -0.02)}
    off = [(k, round(e, 4)) for k, e in errs.items() if abs(e) > 0.02 and k not in named]
    assert not off
    assert all(lo <= errs[k] <= hi for k, (lo, hi) in named.items()), {k: errs[k] for k in named}


def test_the_fit_scores_the_margin_the_estimator_computes(rows):
    """fit_margin's vectorised margin, with calibration.py's constants, is the estimator's to the byte: the
    cross-validation judges what ships. calibration.py holds the constants the fit picks on all rows."""
    from benchmarks.estimator.fit_margin import as_array, design, fit, group, margins, shipped

    for expandable in (False, True):  # each allocator has its own constants
        mine = group(rows, expandable)
        assert len(mine) >= 12
        got = margins(design(mine), as_array(shipped(expandable)))[0]
        assert max(abs(g - r["margin_est"]) for g, r in zip(got, mine)) < 1.0
        assert fit(mine, expandable=expandable)[0] == shipped(expandable)


def test_offload12_rows_come_from_the_pool(rows):
    """ZeRO-1/2 with the optimizer offloaded (core/estimate/offload12.py): the four H100 rows of 2026-12-05
    reserved initialisation's pool plus the fp64 norm block (6.648 GiB each), which sets their estimate:
    ho69 (traced) and ho70-ho72 (held out; 6.49-7.87 GiB estimated before, 8.84 measured) within 1%."""
    from benchmarks.estimator.margin_rows import GIB
    from benchmarks.estimator.margin_table import total_error
    from zerotui.core.estimate import calibration
    from zerotui.core.estimate.margin import offload_norm_block
    from zerotui.core.estimate.offload12 import init_reserved

    mine = {r["id"]: r for r in rows if r["id"].split()[0] in {f"1b-full-ho{n}" for n in range(69, 73)}}
    assert len(mine) == 4
    for r in mine.values():
        pool = init_reserved(r["job"], calibration.CUDA_CONTEXT_BYTES) + offload_norm_block(r["job"])
        assert r["reserved"] == pytest.approx(pool, abs=0.02 * GIB)
        assert r["allocated_est"] + r["margin_est"] == pytest.approx(pool)
        assert 0.0 <= total_error(r) <= 0.01, (r["id"], total_error(r))


def test_with_expandable_segments_no_row_is_short_and_the_workers_rows_are_bounded(rows):
    """zerotui runs every plan with expandable segments (core/plan/allocator.py): on every row measured
    that way the estimate is never more than 3% below the measured peak. Through zerotui's worker 133 of
    the 137 rows are within [-3%, +5%] (2026-12-06, twenty-fourth session: ho82, the fourth plan held out
    from the first step's excess, +3.2%; ho81 again +6.5%; the seed guide's jobs again within; twenty-third,
    125 of 128: the first step's share on the
    smaller of the copy and what the step's new tensors exceed the room by brought ho55 within, and two
    of the three plans held out from it were within, the third +6.5%; twenty-
    second, 122 with its five held-out plans ho75-ho79, run the next session: no gradient share with the optimizer offloaded brought ho18, ho35 three times, ho65 and ho68 within, and the ZeRO-3 bf16 loss
    weight ho56 twice; the refit moved the base to 0; twenty-first, 110: fp16 ZeRO-3 without offload three
    times, 7b-qlora-seed +0.6%, ho35 again +14.3%, the 7B full fine-tune in bf16 -2.1% and ho4 again +1.5%,
    on an H100; twentieth, 104 of 113: the 7B full
    fine-tune, twice -2.8%, on an H200; nineteenth session, 102 of 111: ho69-ho72 and the speed pair's two
    plans, offload12.py; 96 of 105 in the seventeenth: ho67, held out, +0.3% on an H100;
    95 of 104 in the fifteenth, 84 of 90 in the eleventh, 80 of 88 in the tenth). Over +5%: ho18, ho35,
    ho65 and ho68 (ZeRO-1 with the optimizer on the CPU and gradient accumulation, whose held gradients
    get the gradient share: ho18's allocator history shows no holes for them, but dropping the share put
    the held-out ho34 6.9% short on 2026-12-03, and the held-out ho64 9.2% and ho68 4.6% short on
    2026-12-05, docs/estimator.md), ho46 (fp16 ZeRO-1, 4 x 4 x 2,048, no recompute, Liger: 0.28 GiB beyond allocated where the terms give 2.2), and
    the 128k full fine-tunes at 4,096 tokens (ho55, ho56 twice), each over by what its sweep row had.
    Where backward makes no large gradient store the loss counts at calibration.py's
    EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT (test_loss_hole_weight.py): chosen on adapters (ho52-ho54,
    LoRA on that vocabulary, were +6.8% ... +10.0%), three adapter plans held out from it came out
    +2.8%, +5.1% and +2.6% as predicted (+2.5% ... +4.9% after the refit they joined: base 0.1 GiB,
    recompute 0.05). Extended unchanged to full fine-tunes whose offloaded optimizer takes each gradient
    off the GPU, it brought ho49 and ho50 (ZeRO-2, +9.8% and +7.3%) within, and the two plans held out
    from the extension (ho62 bf16 ZeRO-2, ho63 fp16 ZeRO-1, on the 128k vocabulary) came out -0.4% as
    predicted (+5.0% with the weight 1). ho58, the first run held out from ZeRO-0's loss room, came out
    +1.0% as predicted (+0.9% after the refit). ho47 (+12.5%, the sweep +12.8%) is within since ZeRO-0's loss room (margin.loss_room, read from its allocator history). ho15 (+7.4%)
    is within since the seed rows are estimated for the micro-batch width each run drew. The five step-peak plans held out from the
    refined step's moment (ho36-ho39, ho43: Qwen2 tied and untied, a Llama-3.2-3B shape; ZeRO-0, 1 and 2)
    came out within 0.1% of the estimate written down before they ran
    (estimator-step-predictions-2026-12-04.txt); with the three 1.1B runs it was refined on (ho40-ho42),
    all eight are within 0.3% after the refit. The sweeps' rows (their harness: no fused kernels, full
    fp32 logits) come out up to +8.2% (h-n-s2-mb8-s4096-ckpt; v-lora-all-s2-mb8-ckpt was +10.6% before the
    adapters' loss weight, a-s2-cpu-mb16-ckpt +10.2% before its extension, a-s0-mb16-ckpt +12.8% before
    the loss room). In sample: the rows chose calibration.py's
    EXPANDABLE_* shares; docs/estimator.md has the out-of-sample figures."""
    from benchmarks.estimator.fit_margin import group
    from benchmarks.estimator.margin_table import total_error

    mine = group(rows, True)
    worker = [r for r in mine if not r["source"].startswith("sweep")]
    sweeps = [r for r in mine if r["source"].startswith("sweep")]
    # 113 since the 7B full fine-tune on a 24 GiB cap, twice (2026-12-05, twentieth session): allocation to
    # 0.01 GiB, 1.80 GiB held beyond it against 1.19 predicted (-2.8% in all). 118 since the twenty-first:
    # fp16 ZeRO-3 without offload (1b-full-fp16-z3, held-out ho73 and ho74), 7b-qlora-seed and ho35 again; 119
    # with the 7B full fine-tune in bf16 (allocation 17.70 as estimated, 1.80 held beyond it against 1.19); 120
    # with ho4 again (the same plan crashed under the allocator's history recording, then trained without it);
    # 125 with the five plans held out from the twenty-second session's three rules (ho75-ho79, 2026-12-06);
    # 128 with the three held out from the first step's excess (ho80, ho81, ho83, the twenty-third session);
    # 137 with the fourth (ho82), ho81 and ho55 again under the allocator's history, and the seed guide's seven
    # 7B and 13B jobs again at the twenty-fourth session's code (2026-12-06; the forced OOM has no peak);
    # 147 with fp16 LoRA and QLoRA from 2^32 at ZeRO 0-3 (seven plans, twice at ZeRO-0: before and after
    # core/train/stage0_scale.py) and 1b-full-ho32 again with it, and LoRA ZeRO-1 and QLoRA ZeRO-3 again with
    # it (149), and LoRA ZeRO-2 and QLoRA ZeRO-1 from 2^32 (151; twenty-fifth session); 154 with the cap's
    # release (twenty-sixth): 3b-full-fit80's plan again as ho84, and 1b-full-ho23 under 40 and 26 GiB; 159
    # with the five plans held out from what the pool has free at the step (ho85-ho89); 161 with two sweep plans
    # still over the band, through the worker for the first time (ho90, ho91, twenty-seventh session); 163 with
    # the two held out from the loss's blocks at the step (ho92, ho93); 167 with the two held out from the
    # previous micro-batch's partition at ZeRO-2 (ho94, ho95) and the two held out from a loss weight for bf16
    # ZeRO-3 adapters (ho96, ho97; the weight was refuted and not adopted), thirtieth session; 171 with the four
    # held out from ZeRO-3 adapters' freed logits (ho98-ho101, thirty-second session); 173 with the two held out
    # from its split by method on another shape (ho102, ho103, thirty-third session); 174 with the 3B step hole
    # under a cap that does not bind (ho104, the same session); 175 with 2b-49k-full-ho105 under the allocator's
    # history (the same session), 7.1% short until step_copy.copy_on_forward_pool; 178 with the three held out
    # from that guard (ho106-ho108, thirty-fourth session); 183 with five plans of the optimizer on the CPU with
    # accumulation run for the speed model (the same session); 190 with the thirty-sixth session's H200 rows:
    # ho105 again and the pair to tell the accumulation from the shape (ho109, ho110), a 3B ZeRO-2 plan `fit`
    # chose under a 135 GiB cap, and three offload plans that recorded their file pages; 191 with ho84 a third
    # time (thirty-seventh session), meant uncapped on an H200 but answered by an H100: its card's limit
    assert len(worker) == 191 and len(sweeps) == 77
    assert {r["job"].stage for r in worker} == {0, 1, 2, 3} and {r["job"].plan.method for r in worker} == {"full", "lora", "qlora"}
    assert all(total_error(r) >= -0.03 for r in mine), \
        [(r["id"], round(total_error(r), 4)) for r in mine]
    over = sorted(r["id"] for r in worker if total_error(r) > 0.05)
    # 3b-full-fit80: the optimizer step's moment at ZeRO-1 on a 3B shape, 5.98 GiB predicted, 0.08 held.
    # Its allocator history (memsnap-3b-fit80-2026-12-04.txt) shows its pool at the 80 GiB cap when the first
    # step asked for the 11.97 GiB fp32 gradient copy: the allocator handed its free pages back and retried,
    # so the peak measured is the cap's, not the holes'. The plan again as ho84 (H100, 2026-12-06): one
    # release, at the first step, and +8.8% again (docs/estimator-log.md, "The cap and the allocator's release")
    # ho65 and ho68 (2026-12-05): ZeRO-1 with the optimizer on the CPU and accumulation, as ho18 and ho35.
    # ho35 ran a second and third time on 2026-12-05 (11.38 GiB both, 11.50 on 2026-12-03): its excess repeats.
    # ho18, ho35, ho65 and ho68 (ZeRO-1, the optimizer on the CPU, accumulation) are within since
    # margin.gradient_churn (2026-12-06); ho56 since ZeRO-3's bf16 loss weight (loss_holes.loss_hole_weighted)
    # ho55 (truew-a, +6.0%) since the first step's excess (margin.first_step_term, 2026-12-06): +2.9%. Of the
    # three plans held out from that rule (estimator-first-step-excess-predictions-2026-12-06.txt), ho80 and
    # ho83 came out +3.2% and +1.8% (+6.4% and +4.5% by the old rule); ho81 (1 x 4,096 tokens, no accumulation)
    # +6.5% (the old rule +6.8%): its overflow, 3.5 GiB, is most of the 4.6 GiB copy. Its second run, under the
    # allocator's history, peaked to the MiB where the first did (memsnap-1b128k-ho81-2026-12-06.txt: the pool
    # last grew in step 0's backward; the optimizer step added nothing), and the fourth plan, ho82, +3.2%
    # ho46 and ho81 (both runs) are within since what the pool has free at the step bounds the first step's
    # segment (margin.step_free, 2026-12-06, twenty-sixth session): +4.0% and +3.2%
    # w8-s2-mb8-s4096-ckpt and n-s3-lora-all-r32-mb4-ckpt through zerotui's worker (ho90, ho91, H100, 2026-12-06):
    # +6.9% and +5.8%, where the sweeps had +6.7% (Adam's state made at start, to the MiB) and +5.7% (lazily), so
    # the excess is the estimator's, not the sweeps' harness's. ho90 is within (+0.4%) since its allocator
    # history showed the first step's copy served from the loss's freed blocks (margin.copy_in_loss_blocks)
    # 1b128k-lora-s3-ho96 (LoRA, bf16 ZeRO-3, 4 x 2,048 on the 128k vocabulary, 2026-12-07): +12.1%, 2.10 GiB
    # beyond allocated where the loss term gave 4.11. A loss weight of 0.7 was held out on it and ho97 and
    # refuted (ho97 3.7% short with it; estimator-zero3-adapter-loss-weight-predictions-2026-12-07.txt). ho96,
    # ho91 and every ZeRO-3 16-bit adapter row are within since loss_holes.freed_logits (thirty-first session,
    # from their allocator histories, memsnap-z3-adapters-2026-12-07.txt). The refit that came with it (base
    # 0.1 GiB, recompute 0.05) put 1b-full-ho35 (ZeRO-1, the optimizer on the CPU) at +5.3% and ho79 (bf16
    # ZeRO-3 full fine-tune, 128k vocabulary) at +5.1%, where they were +4.9% and +4.5%
    # The ZeRO-1 guard for the step's fp32 copy on forward's pool (step_copy.copy_on_forward_pool, thirty-third
    # session, from ho104's and ho105's allocator histories; not held out) raised 1b-full-ho24 and q1.5b-full-ho44
    # to +7.0% (their copies found some of forward's room), and fit80 and ho84 to +15%. Held out (thirty-fourth
    # session, estimator-step-copy-holdout-predictions-2026-12-07.txt): the plan over its boundary (ho106) read
    # as the margin's rule, +1.4%, and so did both under it, 7b-l8-full-ho107 and 1b128k-full-ho108, +8.0% and
    # +7.9% with the guard: its condition is on the safe side of what decides. The tied head's gradient at
    # ZeRO's first bucket (gpu.peak, the same session) put q1.5b-full-ho88's allocation right and its total
    # from +4.2% to +5.3%. The pair run to tell the accumulation from the shape (thirty-sixth session, H200):
    # ho109 (ho105's shape at 4 micro-batches) read as ho105, +0.1%; ho110 (ho108's at 8) as ho108, +7.4%
    assert over == ["1b-full-ho24 (share-a)", "1b-full-ho35 (fp16z3c-h100)", "1b128k-full-ho108 (memsnap-step-copy-ho-h100)",
                    "1b128k-full-ho110 (memsnap-step-copy-ga-h200)",
                    "1b128k-full-ho79 (z3norm-h100)", "3b-full-fit80 (cards-f)", "3b-full-ho84 (caprel3-h100)",
                    "3b-full-ho84 (ho84-cardcap-h100)",
                    "7b-l8-full-ho107 (memsnap-step-copy-ho-h100)", "q1.5b-full-ho44 (step-e)",
                    "q1.5b-full-ho88 (stepfree2-h100)"], over
    # ZeRO-3 adapters in 16 bits (loss_holes.freed_logits): -2.8% (7b-lora-ho6, whose allocator history shows
    # 0.53 GiB of initialisation's holes the rule does not count) ... +0.7% (ho96); were -3.0% ... +12.1%
    from zerotui.core.estimate.loss_holes import freed_logits
    z3a = {r["id"]: total_error(r) for r in mine if freed_logits(r["job"])}
    assert len(z3a) == 23 and all(-0.03 <= e <= 0.012 for e in z3a.values()), z3a
    # The plans held out from that rule, estimated before they ran on an H100 (thirty-second session,
    # estimator-freed-logits-predictions-2026-12-07.txt): ho99 (QLoRA) and ho100 (fp16), one micro-batch a step,
    # +0.3% and +0.5%, held 2.15 and 2.10 GiB beyond allocated (the rule: one hole, 1.96); ho98 (bf16 LoRA, four
    # micro-batches) held 1.10, one hole where the rule counted two: +9.6% until loss_holes.freed_logits_holes,
    # which ho101 (two micro-batches) was held out from: 1.10 held, 11.46 GiB against 11.58 predicted, +1.1%
    freed_held_out = {r["id"]: r for r in worker if any(f"-ho{n} " in r["id"] for n in (98, 99, 100, 101))}
    assert len(freed_held_out) == 4 and all(0.0 <= total_error(r) <= 0.012 for r in freed_held_out.values()), \
        {k: total_error(r) for k, r in freed_held_out.items()}
    one_hole = [r["reserved"] - r["allocated"] for k, r in freed_held_out.items() if "-ho98 " in k or "-ho101 " in k]
    assert len(one_hole) == 2 and all(1.0 * 2**30 < h < 1.5 * 2**30 for h in one_hole), one_hole
    # the split held out on the Qwen2 1.5B shape (152k vocabulary, one hole 1.16 GiB), 2 x 2 x 2,048, written
    # down before they ran (estimator-q15b-holes-predictions-2026-12-07.txt): bf16 LoRA (ho102) held 1.28 GiB
    # beyond allocated, one hole; QLoRA (ho103) 2.40, two; +0.9% and +1.0%
    split = {r["id"]: r for r in worker if "-ho102 " in r["id"] or "-ho103 " in r["id"]}
    assert len(split) == 2 and all(0.0 <= total_error(r) <= 0.012 for r in split.values()), \
        {k: total_error(r) for k, r in split.items()}
    held = {k.split()[0][-5:]: (r["reserved"] - r["allocated"]) / 2**30 for k, r in split.items()}
    assert 1.16 < held["ho102"] < 1.75 < 2.32 < held["ho103"] < 2.8, held
    # 3b-full-fit80's plan with one row a micro-batch (ho104, H100, 78 GiB cap; written down before it ran,
    # estimator-3b-step-hole-predictions-2026-12-07.txt): no allocator retry, 71.84 GiB reserved where the step's
    # allocation and its hole (margin.step_hole) give 71.84, +0.2% in all: fit80's +8.6% is its cap's release
    ho104 = next(r for r in worker if "-ho104 " in r["id"])
    assert 0.0 <= total_error(ho104) <= 0.01 and abs(ho104["reserved"] - ho104["allocated"] - 5.98 * 2**30) < 0.1 * 2**30
    # 2b-49k-full-ho105 (bf16 ZeRO-1, 2 x 8 x 2,048, no recompute; estimator-2b-step-copy-predictions-2026-12-07.txt):
    # 46.12 GiB reserved, the copy grown on forward's pool (the file's reading B, 46.2); 7.1% short of the
    # margin's sum, +0.4% with the guard
    ho105 = next(r for r in worker if "-ho105 " in r["id"])
    assert 0.0 <= total_error(ho105) <= 0.01, total_error(ho105)
    # the two ZeRO-2 plans held out from the previous micro-batch's partition (gpu.peak's "grads" moment),
    # written down before they ran (estimator-previous-partition-predictions-2026-12-06.txt): allocated 43.80
    # and 42.23 GiB against 43.72 and 42.33 predicted (42.66 and 40.66 without the partition); +3.8%, +1.1%
    prevpart = {r["id"]: r for r in worker if any(f"-ho{n} " in r["id"] for n in (94, 95))}
    assert len(prevpart) == 2 and all(abs(r["allocated"] - r["allocated_est"]) <= 0.3 * 2**30
                                      and 0.0 <= total_error(r) <= 0.05 for r in prevpart.values()), prevpart
    # the two ZeRO-2 plans held out from that rule, written down before they ran on an H100
    # (estimator-loss-room-step-predictions-2026-12-06.txt): +0.4% and +1.0%, where the estimator before it
    # gives +6.9% and +5.4%
    loss_blocks_held_out = {r["id"]: total_error(r) for r in worker if any(f"-ho{n} " in r["id"] for n in (92, 93))}
    # (ho92 -0.2% since the thirty-first session's refit took its recompute share from 0.1 to 0.05)
    assert len(loss_blocks_held_out) == 2 and all(-0.01 <= e <= 0.02 for e in loss_blocks_held_out.values()), \
        loss_blocks_held_out
    # the five plans held out from that rule, written down before they ran on an H100
    # (estimator-step-free-predictions-2026-12-06.txt): +1.4%, +3.2%, +4.0%, -2.1%, -2.1%, where the rule
    # before it gives +4.8%, +6.5%, +7.5%, +1.3%, +1.3%; ho88 +5.3% since the tied head's gradient at ZeRO's
    # first bucket (thirty-fourth session: its allocation from 1.3% short to 0.2%)
    step_free_held_out = {r["id"]: total_error(r) for r in worker if any(f"-ho{n} " in r["id"] for n in range(85, 90))}
    assert len(step_free_held_out) == 5 and all(-0.03 <= e <= 0.054 for e in step_free_held_out.values()), step_free_held_out
    # 0.088 (3b-full-ho84, its cap); 0.121 (ho96) until loss_holes.freed_logits; ho35 was 0.143 until 2026-12-06;
    # fit80 and ho84 at 0.152 and 0.155 since step_copy (their cap released the pool the guard describes)
    # (ho84's third run, thirty-seventh session: a 135 GiB cap on an 80 GB H100, so the card's limit released it)
    capped_release = {"3b-full-fit80 (cards-f)", "3b-full-ho84 (caprel3-h100)", "3b-full-ho84 (ho84-cardcap-h100)"}
    assert all(total_error(r) <= 0.09 for r in worker if r["id"] not in capped_release), \
        [(r["id"], total_error(r)) for r in worker if total_error(r) > 0.09]
    assert all(total_error(r) <= 0.16 and r["job"].stage == 1 for r in worker if r["id"] in capped_release)
    # A plan whose estimate is over its cap, and whose allocation is not, releases and holds what is live
    # (margin_table.estimated): 1b-full-ho23 under 26 GiB, its pool 28.93 GiB by the estimate and 28.80
    # measured under 40, held 24.81 and ran every step, releasing twice a step; +0.1% against its allocation
    # and context, +16.6% against its estimate taken whole
    capped = {r["id"]: total_error(r) for r in worker if r["allocated_est"] + r["margin_est"] + r["context"] > r["cap"]}
    assert list(capped) == ["1b-full-ho23 (caprel1-h100)"] and -0.03 <= capped["1b-full-ho23 (caprel1-h100)"] <= 0.02, capped
    offloaded_zero1 = {r["id"]: total_error(r) for r in worker if r["job"].stage == 1 and r["job"].oo != "none"
                       and r["job"].plan.grad_accum > 1}
    # ho35 +5.3% since the thirty-first session's refit (its 0.1 GiB base), +4.9% before; 11 with 7b-l8-full-oga4
    # (1 x 4, thirty-fourth session), +0.5%
    assert len(offloaded_zero1) == 11 and all(-0.03 <= e <= 0.055 for e in offloaded_zero1.values()), offloaded_zero1
    # The five plans held out from those rules (the ZeRO-3 norm block, the ZeRO-3 bf16 loss weight, no gradient
    # share with the optimizer offloaded), estimated before they ran on an H100 (2026-12-06): all within, where
    # the rules' absence gave ho75 -7.4%, ho76 -7.2%, ho78 +11.0% and ho79 +10.1%
    # (estimator-zero3-norm-loss-predictions-2026-12-06.txt, estimator-offload-gradients-predictions-2026-12-06.txt);
    # ho79 +5.1% since the thirty-first session's refit (+4.5% before)
    held_out = {r["id"]: total_error(r) for r in worker if any(f"-ho{n} " in r["id"] for n in range(75, 80))}
    assert len(held_out) == 5 and all(-0.03 <= e <= 0.052 for e in held_out.values()), held_out
    # ho82, the ZeRO-1 plan held out from the first step's excess, ran a session later: +3.2% as written down
    ho82 = [total_error(r) for r in worker if r["id"].startswith("1b128k-full-ho82 ")]
    assert len(ho82) == 1 and 0.0 <= ho82[0] <= 0.05, ho82
    # The seven fp16 adapter plans from 2^32 (LoRA at ZeRO 0, 1, 3 and 3 with the optimizer on the CPU, QLoRA at
    # 0, 2, 3), new shapes of plan for the margin, written down before they ran on an H100
    # (estimator-fp16-overflow-predictions-2026-12-06.txt): -0.2% ... +3.3%; the ZeRO-0 pair again after
    # stage0_scale.py, to the MiB of their first runs, and two of the others again with it (to the byte); then
    # LoRA ZeRO-2 and QLoRA ZeRO-1, written down first too: +3.3%, +1.3%
    ovf = {f"{r['id']}": total_error(r) for r in worker if "-fp16-ovf-" in r["id"]}
    assert len(ovf) == 13 and all(-0.03 <= e <= 0.05 for e in ovf.values()), ovf
    # fp16 at ZeRO-3 keeps no first-step segment (margin.gone_with_expandable), set on 1b-full-fp16-z3 (+6.6%
    # before, -0.7% after); the two plans held out from it came out +0.5% and +2.0% (+3.8% and +7.7% by the
    # rule before), written down first (estimator-fp16-z3-first-step-predictions-2026-12-05.txt)
    fp16_z3 = {r["id"]: total_error(r) for r in worker if r["job"].stage == 3 and r["job"].plan.precision == "fp16"
               and r["job"].plan.method == "full" and r["job"].oo == "none"}
    assert len(fp16_z3) == 3 and all(-0.03 <= e <= 0.025 for e in fp16_z3.values()), fp16_z3
    zero0 = {r["id"]: total_error(r) for r in mine if r["job"].stage == 0 and r["margin_sources"]["loss room"]}
    from zerotui.core.estimate.loss_holes import loss_hole_weighted
    weighted = {r["id"]: total_error(r) for r in mine if loss_hole_weighted(r["job"])}
    # 80 since ZeRO-3's bf16 full fine-tunes joined (2026-12-06), 83 with the held-out ho75-ho77 (2026-12-06),
    # 87 with the seed guide's adapter jobs again (twenty-fourth session), 93 with the fp16 adapters from 2^32
    # at ZeRO 0-2 (twenty-fifth), 94 with LoRA ZeRO-1 again, 96 with LoRA ZeRO-2 and QLoRA ZeRO-1, 100 with
    # four of the five plans of the optimizer on the CPU with accumulation (oga, thirty-fourth session), 103
    # with three offload plans again on the H200 (rssfile, thirty-sixth)
    assert len(weighted) == 103 and all(-0.03 <= e <= 0.05 for e in weighted.values()), weighted
    # margin.loss_room; 19 with 1b-full-ho32 again under stage0_scale.py (2026-12-06: the same peak to the MiB)
    assert len(zero0) == 19 and all(-0.03 <= e <= 0.05 for e in zero0.values()), zero0
    stepped = {r["id"]: total_error(r) for r in worker
               if r["id"].split()[0] in {f"{s}-full-ho{n}" for s in ("1b", "q1.5b", "q1.5bu", "3b") for n in range(36, 44)}}
    assert len(stepped) == 8 and all(abs(e) <= 0.003 for e in stepped.values()), stepped
    assert max(total_error(r) for r in sweeps) <= 0.09  # 0.087 (a-s2-mb16-ckpt), 2026-12-06; 0.102 on 2026-12-04


def test_stage_one_first_step_segment_with_expandable_segments():
    """At ZeRO-1 with expandable segments the step's fp32 gradient copy grows the cache by the copy less
    the 16-bit gradients it is made from (measured on ho12 and ho14); at stage 2 by the whole copy; bf16
    at stage 0 not at all, nor bf16 and fp16 at stage 3 (1b-full-ho9; 1b-full-fp16-z3, ho73 and ho74); fp32 at
    stage 1 (no 16-bit gradients, unmeasured) by the whole copy, and fp16 at stage 0 (unmeasured) too."""
    spec = _llama_family_spec("llama-1b", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 22,
                                           "num_attention_heads": 32, "num_key_value_heads": 4,
                                           "intermediate_size": 5632, "vocab_size": 32000}, "test")
    got = {}
    for stage in (0, 1, 2, 3):
        for precision in ("bf16", "fp16", "fp32"):
            job = job_for(Plan(model="llama-1b", method="full", stage=stage, precision=precision, micro_batch=8,
                               seq_len=1024, grad_ckpt=True, kernels="none"), spec, box_80g(), env={})
            assert job.expandable
            got[stage, precision] = gpu.peak(job, gpu.model_states(job)).margin_sources["first step"]
    psi = got[2, "bf16"] / 4
    assert psi == pytest.approx(1.1e9, rel=0.01)
    assert got[1, "bf16"] == got[1, "fp16"] == pytest.approx(2 * psi)
    assert got[2, "fp16"] == pytest.approx(4 * psi) and got[0, "bf16"] == 0
    assert got[1, "fp32"] == pytest.approx(4 * psi)
    assert got[3, "bf16"] == got[3, "fp16"] == 0 and got[0, "fp16"] == pytest.approx(4 * psi)


def test_loss_and_gathers_share_their_holes():
    """ZeRO-3 with the weights on the CPU: the gathers add to the margin only what their share exceeds the
    loss's, so a long micro-batch (the loss churns most) gets no gather part and a short one gets the
    difference; the margin is still the sum of its parts."""
    spec = _llama_family_spec("llama-1b", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 22,
                                           "num_attention_heads": 32, "num_key_value_heads": 4,
                                           "intermediate_size": 5632, "vocab_size": 32000}, "test")
    base = dict(model="llama-1b", method="full", stage=3, offload_optimizer="cpu", offload_params="cpu",
                grad_ckpt=True, kernels="none", seq_len=1024)
    for micro_batch in (1, 32):
        job = job_for(Plan(micro_batch=micro_batch, **base), spec, box_80g(), env={})
        peak = gpu.peak(job, gpu.model_states(job))
        src, terms = peak.margin_sources, peak.margin_terms
        _, loss_share, _, gather_share, _, _ = shares(job.expandable)  # env={}: zerotui's own allocator setting
        loss, gather = loss_share * src["loss"], gather_share * src["gather"]
        assert src["gather"] > 0 and terms["loss"] == pytest.approx(loss)
        assert terms["gather"] == pytest.approx(max(0.0, gather - loss))
        assert peak.margin == pytest.approx(sum(terms.values()))
        if micro_batch == 32:
            assert loss > gather and terms["gather"] == 0
        else:
            assert gather > loss and terms["gather"] > 0


def test_with_expandable_segments_the_first_step_adds_a_segment_only_when_it_cannot_fit_in_what_step_zero_freed(monkeypatch):
    """Sweeps 1 and 2's per-phase figures (core/estimate/margin.py, first_step_term):
    at step 0 Adam's moments and the fp32 gradient copy are created in the space that step's activations
    freed, and the pool grows only when they do not fit. A 1.1B ZeRO-2 full fine-tune at 16 x 2,048 tokens frees ~70 GiB
    for 14 GiB of new tensors: no first-step term. At 1 x 1,024 tokens it frees about 2 GiB: the term is
    calibration.py's share of the smaller of the copy and what the new tensors exceed the room by (what
    later steps leave of the segment it grew; margin.first_step_term, 2026-12-06). The threshold is
    calibration.py's: just past it the term is the share of a small excess, not of the whole copy. PyTorch's
    default allocator keeps its own rule (the copy needs a block no freed one holds)."""
    from zerotui.core.estimate import calibration as cal
    from zerotui.core.estimate.margin import first_step_share, room_holes

    spec = _llama_family_spec("llama-1b", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 22,
                                           "num_attention_heads": 32, "num_key_value_heads": 4,
                                           "intermediate_size": 5632, "vocab_size": 32000}, "test")

    def peak(micro_batch, seq_len, env, stage=2):
        job = job_for(Plan(model="llama-1b", method="full", stage=stage, micro_batch=micro_batch, seq_len=seq_len,
                           kernels="none"), spec, box_80g(), env=env)
        return job, gpu.peak(job, gpu.model_states(job))

    default = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}
    shares = {}
    for mb, seq, fits in ((16, 2048, True), (1, 1024, False)):
        job, p = peak(mb, seq, {})
        assert job.expandable
        copy = p.margin_sources["first step"]
        assert copy == pytest.approx(4 * job.psit)  # the segment the step would need
        assert p.step_new == pytest.approx(8 * job.psit + 6 * job.psit)  # moments + fp32 copy and step buffers
        # the room is what forward/backward freed plus the holes of the margin's other terms
        holes = p.margin - p.margin_terms["first step"]
        assert room_holes(p.margin_terms) == pytest.approx(holes)
        shares[mb] = first_step_share(p.step_room, p.step_new, holes)
        assert (shares[mb] <= cal.EXPANDABLE_FIRST_STEP_ROOM_SHARE) is fits
        excess = p.step_new - cal.EXPANDABLE_FIRST_STEP_ROOM_SHARE * (p.step_room + holes)
        assert (excess <= 0) is fits
        assert p.margin_terms["first step"] == pytest.approx(
            0.0 if fits else cal.EXPANDABLE_FIRST_STEP_SHARE * min(copy, excess))
        if not fits:  # 2 GiB freed for 14 GiB of new tensors: the excess is larger than the copy
            assert excess > copy
    # the threshold decides: set just below the fitting plan's share, its step no longer fits, and what it
    # exceeds the room by (1% of its new tensors) is what the share applies to, not the whole copy
    monkeypatch.setattr(cal, "EXPANDABLE_FIRST_STEP_ROOM_SHARE", shares[16] * 0.99)
    # (what the pool has free at the step bounds the term too, and the loss's blocks can take the copy: their
    # own tests below; left out here)
    monkeypatch.setattr(gpu, "step_free", lambda *a: 0.0)
    monkeypatch.setattr(gpu, "copy_in_loss_blocks", lambda *a: False)
    job, p = peak(16, 2048, {})
    assert 0 < p.margin_terms["first step"] == pytest.approx(cal.EXPANDABLE_FIRST_STEP_SHARE * 0.01 * p.step_new)
    assert p.margin_terms["first step"] < 0.1 * cal.EXPANDABLE_FIRST_STEP_SHARE * 4 * job.psit
    monkeypatch.undo()
    # the default allocator: the plan whose step fits with expandable segments keeps its term
    job, p = peak(16, 2048, default)
    assert not job.expandable and p.margin_terms["first step"] == p.margin_sources["first step"] > 0
    assert 0 < cal.EXPANDABLE_FIRST_STEP_SHARE < cal.FRAGMENTATION_FIRST_STEP_SHARE == 1.0
    # stage 0 in fp16: DeepSpeed's optimizer makes the moments at initialisation, so the step creates only its copy
    job = job_for(Plan(model="llama-1b", method="full", stage=0, precision="fp16", micro_batch=1, seq_len=1024,
                       kernels="none"), spec, box_80g(), env={})
    states = gpu.model_states(job)
    assert gpu.peak(job, states).step_new == pytest.approx(states.step_transient)


def test_the_fp64_gradient_norm_block_with_the_optimizer_offloaded():
    """DeepSpeed's ZeRO-1/2 CPU-offload path takes each gradient's norm in float64 on the GPU
    (margin.offload_norm_block): 8 bytes per element of the largest trainable tensor's slice, with the
    optimizer offloaded, at stages 1-2 and at stage 3 with the weights on the GPU, none for adapters'
    small tensors; a part of the margin."""
    from zerotui.core.estimate.margin import offload_norm_block

    spec = _llama_family_spec("llama-1b", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 22,
                                           "num_attention_heads": 32, "num_key_value_heads": 4,
                                           "intermediate_size": 5632, "vocab_size": 32000}, "test")

    def job(**fields):
        plan = Plan(**{"model": "llama-1b", "method": "full", "micro_batch": 4, "seq_len": 1024, "kernels": "none",
                       **fields})
        return job_for(plan, spec, box_80g(), env={})

    embedding = 32000 * 2048
    for stage in (1, 2):
        j = job(stage=stage, offload_optimizer="cpu")
        assert offload_norm_block(j) == 8 * embedding
        peak = gpu.peak(j, gpu.model_states(j))
        assert peak.margin_terms["gradient norm (fp64, offload)"] == 8 * embedding
        assert peak.margin == pytest.approx(sum(peak.margin_terms.values()))
    assert offload_norm_block(job(stage=2)) == 0  # optimizer on the GPU: the norm is taken in the step
    # ZeRO-3 takes the same fp64 norm of each offloaded gradient partition (stage3.py), where the weights stay
    # on the GPU; with them offloaded too the gathers' holes hold it (2026-12-06, twenty-second session)
    z3 = job(stage=3, offload_optimizer="cpu")
    assert offload_norm_block(z3) == 8 * embedding
    assert gpu.peak(z3, gpu.model_states(z3)).margin_terms["gradient norm (fp64, offload)"] == 8 * embedding
    assert offload_norm_block(job(stage=3, offload_optimizer="cpu", offload_params="cpu")) == 0
    default = job_for(Plan(model="llama-1b", method="full", stage=3, offload_optimizer="cpu", micro_batch=4,
                           seq_len=1024, kernels="none"), spec, box_80g(),
                      env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"})
    assert not default.expandable and offload_norm_block(default) == 0  # the default allocator's holes hold it
    assert offload_norm_block(job(stage=3)) == 0
    assert offload_norm_block(job(stage=0)) == 0
    lora = job(stage=2, offload_optimizer="cpu", method="lora", lora_r=8)
    assert offload_norm_block(lora) == 0  # 8 x 2,048 adapters: under the allocator's small-block size
    # with several ranks the slice in one partition is at most the partition
    many = job_for(Plan(model="llama-1b", method="full", stage=2, offload_optimizer="cpu", micro_batch=4,
                        seq_len=1024, kernels="none", gpus=64), spec,
                   Hardware(gpus=[GpuInfo(index=i, name="test GPU", total_bytes=80 * GIB, free_bytes=80 * GIB,
                                          compute_capability=(9, 0), bf16=True) for i in range(64)],
                            ram_total_bytes=4096 * GIB, ram_available_bytes=4096 * GIB), env={})
    assert many.N == 64 and offload_norm_block(many) == pytest.approx(8 * min(embedding, many.psit / 64))
    assert offload_norm_block(many) < 8 * embedding
    # at ZeRO-3 each parameter is split over the ranks, and the norm is taken 250M elements at a time
    wide = _llama_family_spec("llama-3b", {"model_type": "llama", "hidden_size": 3072, "num_hidden_layers": 28,
                                           "num_attention_heads": 24, "num_key_value_heads": 8,
                                           "intermediate_size": 8192, "vocab_size": 128256,
                                           "tie_word_embeddings": True}, "test")
    for gpus, block in ((1, 8 * 250_000_000), (8, 8 * 128256 * 3072 / 8)):
        z3 = job_for(Plan(model="llama-3b", method="full", stage=3, offload_optimizer="cpu", micro_batch=1,
                          seq_len=1024, kernels="none", gpus=gpus), wide,
                     Hardware(gpus=[GpuInfo(index=i, name="test GPU", total_bytes=80 * GIB, free_bytes=80 * GIB,
                                            compute_capability=(9, 0), bf16=True) for i in range(gpus)],
                              ram_total_bytes=4096 * GIB, ram_available_bytes=4096 * GIB), env={})
        assert z3.N == gpus and offload_norm_block(z3) == pytest.approx(block)


def test_the_first_steps_segment_grows_by_no_more_than_the_copy_less_what_the_pool_has_free_at_the_step():
    """margin.step_free (2026-12-06, twenty-sixth session): where forward or backward is the peak of
    allocation, the optimizer step runs with the difference free in the pool, and the first step's segment
    grows by at most its fp32 copy less that (ho81 grew nothing at its step with 3.36 GiB free for a 4.60
    GiB copy). Not at ZeRO-2 with accumulation, whose step leaves more holes (1b-full-ho13)."""
    from zerotui.core.estimate import calibration as cal
    from zerotui.core.estimate.margin import step_free

    spec = _llama_family_spec("llama-1b128k", {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
                                               "num_attention_heads": 32, "num_key_value_heads": 8,
                                               "intermediate_size": 8192, "vocab_size": 128256}, "test")

    # with Adam's state made at the first step, so that the loss's blocks do not take the copy
    # (copy_in_loss_blocks, the next test): the rule this test is about is the one such runs keep
    def peak(stage, grad_accum, env=None):
        job = job_for(Plan(model="llama-1b128k", method="full", stage=stage, micro_batch=1, grad_accum=grad_accum,
                           seq_len=4096, kernels="none"), spec, box_80g(), env=env or {}, states_at_start=False)
        return job, gpu.peak(job, gpu.model_states(job))

    job, p = peak(2, 1)
    free = step_free(job, p.allocated, p.moments["step"])
    copy = p.margin_sources["first step"]
    assert p.phase == "backward" and 0 < free < copy  # ho81's plan: 3.36 GiB free, a 4.60 GiB copy
    holes = p.margin - p.margin_terms["first step"]
    excess = p.step_new - cal.EXPANDABLE_FIRST_STEP_ROOM_SHARE * (p.step_room + holes)
    assert copy - free < excess
    assert p.margin_terms["first step"] == pytest.approx(cal.EXPANDABLE_FIRST_STEP_SHARE * (copy - free))
    # ZeRO-2 with accumulation: nothing counts as free, the term is the share of the smaller of copy and excess
    job, p = peak(2, 2)
    assert step_free(job, p.allocated, p.moments["step"]) == 0.0
    holes = p.margin - p.margin_terms["first step"]
    excess = p.step_new - cal.EXPANDABLE_FIRST_STEP_ROOM_SHARE * (p.step_room + holes)
    assert p.margin_terms["first step"] == pytest.approx(cal.EXPANDABLE_FIRST_STEP_SHARE * min(copy, max(excess, 0)))
    # ZeRO-1 without accumulation counts it; PyTorch's default allocator keeps its own rule (the whole copy)
    job, p = peak(1, 1)
    assert step_free(job, p.allocated, p.moments["step"]) > 0
    job, p = peak(2, 1, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"})
    assert step_free(job, p.allocated, p.moments["step"]) == 0.0
    assert p.margin_terms["first step"] == p.margin_sources["first step"] > 0


def test_the_first_steps_copy_adds_no_segment_where_the_loss_blocks_were():
    """margin.copy_in_loss_blocks (2026-12-06, twenty-seventh session): with Adam's moments made at start the
    first step's only new tensor is its fp32 gradient copy, and where the loss's blocks (freed in backward, one
    range) are at least as large as the copy less what is free at the step, the step adds no segment.
    7b-l8-full-ho90's plan (the sweeps' w8-s2-mb8-s4096-ckpt): a 7.01 GiB copy, three 3.91 GiB loss blocks,
    and its allocator history has the pool last grow in backward."""
    from zerotui.core.estimate.margin import copy_in_loss_blocks, step_free

    spec = _llama_family_spec("llama-7b-l8", {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 8,
                                              "num_attention_heads": 32, "num_key_value_heads": 32,
                                              "intermediate_size": 11008, "vocab_size": 32000}, "test")

    def peak(micro_batch, at_start=True, env=None):
        job = job_for(Plan(model="llama-7b-l8", method="full", stage=2, micro_batch=micro_batch, seq_len=4096,
                           grad_ckpt=True, kernels="none"), spec, box_80g(), env=env or {}, states_at_start=at_start)
        return job, gpu.peak(job, gpu.model_states(job))

    job, p = peak(8)
    copy, loss = p.margin_sources["first step"], p.margin_sources["loss"]
    free = step_free(job, p.allocated, p.moments["step"])
    assert copy / GIB == pytest.approx(7.01, abs=0.01) and loss / GIB == pytest.approx(11.72, abs=0.01)
    assert copy_in_loss_blocks(job, loss, copy, free) and p.margin_terms["first step"] == 0.0
    # the same run with the moments made at its first step (the sweeps' harness before sweep 4) keeps the term
    lazy_job, lazy = peak(8, at_start=False)
    assert not copy_in_loss_blocks(lazy_job, loss, copy, free) and lazy.margin_terms["first step"] > 1.0 * GIB
    assert lazy.margin - p.margin == pytest.approx(lazy.margin_terms["first step"])
    # a quarter of the tokens: the loss's blocks (2.93 GiB) are smaller than the copy, the term stays
    job, p = peak(2)
    assert p.margin_sources["loss"] < p.margin_sources["first step"] - step_free(job, p.allocated, p.moments["step"])
    assert p.margin_terms["first step"] > 0
    # PyTorch's default allocator keeps the whole copy
    job, p = peak(8, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"})
    assert p.margin_terms["first step"] == p.margin_sources["first step"] > 0

