"""A guard on the optimizer step's moment at ZeRO-1: the step's fp32 gradient copy on top of forward's pool.

With expandable segments the first optimizer step asks for one flat fp32 copy of the gradient partition
(4 bytes a trainable weight, DeepSpeed's ``stage_1_and_2.py`` ``step``). Two allocator histories of bf16
ZeRO-1 full fine-tunes without recompute (2026-12-07, thirty-third session, H100) show where it goes when
forward has grown the pool past what initialisation left:

- 2b-49k-full-ho105 (memsnap-2b-ho105-2026-12-07.txt): initialisation's pool 31.92 GiB (the resident states
  and the 3.55 GiB hole of the 16-bit weights DeepSpeed flattened), forward grew it to 35.62, backward's
  gradient partition to 39.21, and the 7.09 GiB copy to 46.12: 6.91 of it new. The margin's sum gave 42.57
  (the step's allocation and the hole, ``margin.step_moment_term``): the run was 7.1% over its estimate,
  the one expandable row short by more than 3%.
- 3b-full-mb1-ho104 (memsnap-3b-ho104-2026-12-07.txt): forward fit in initialisation's room; the copy grew
  the pool by its whole 11.97 GiB on top of the states, the hole and the partition (71.84, as this gives).
  3b-full-fit80's history (memsnap-3b-fit80-2026-12-04.txt) has the same copy find no room after forward
  outgrew initialisation's pool by 4.64 GiB: 77.82 uncapped, where the cap made the allocator release.

Where forward's overflow is larger than the copy, the copy lands in what forward freed: the 1.1B and 1.5B
ZeRO-1 rows without recompute whose overflow was 1.6-3.7 times the copy (ho45, ho46, ho82, ho88) held
0.19-3.4 GiB beyond allocated, as the margin's terms say, so the guard stays off there. With recompute the
copy found room where this sum says it would not (1b-full-ho14 and ho41 held the step hole alone, ho41 to
0.05%; the guard would put them at +4.5% and +9.0%), so the guard is for plans without it. Set from these
three rows and checked on the 25 ZeRO-1 16-bit full fine-tune rows with the optimizer on the GPU; not
held out. It raises two rows that are within without it above +5% (1b-full-ho24 and q1.5b-full-ho44,
+7.0%: their copies found some of forward's room), and 3b-full-fit80 and ho84 to +15% (their cap
released the pool it describes). ZeRO-2's step builds its copy otherwise (per accumulation boundary);
no history of it was taken, so the guard is ZeRO-1's only. Several GPUs divide the partition and the
copy but not the hole: reasoning, one GPU measured.

Held out the next session (estimator-step-copy-holdout-predictions-2026-12-07.txt): a plan over the
boundary (2b-49k-full-ho106, overflow 1.18 times the copy) read as the margin's rule, +1.4%; both under it
(7b-l8-full-ho107, 1b128k-full-ho108) read as the rule too, +8.0% and +7.9% with the guard. What decides is
the free range at the top of the pool when the copy comes (their histories: 3.96 and 2.35 GiB, ho105's
0.18), which this condition does not see. The session after, the same plans with the other accumulation
(ho109, ho110) read as their shapes had, to the byte: the accumulation does not decide. Before the fp32
copy the step makes a 16-bit flat copy of the partition; where that one lands (the allocator's best fit:
the top range in ho105/ho109, lower in ho110) sets what is left at the top. Over nine histories the split
follows forward's overflow over the copy at about 0.6, a boundary fitted on them and none held out; the
guard stays at 1, erring high (about 8%) on the plans between."""
from __future__ import annotations

from zerotui.core.estimate.margin import step_hole


def copy_on_forward_pool(job, moments: dict[str, float]) -> float:
    """The pool (bytes reserved) when the first step's fp32 copy finds no room: the larger of
    initialisation's pool and forward's peak, plus backward's gradient partition and the copy; 0 where the
    guard does not apply or forward freed room enough for the copy. ``moments``: gpu.peak's allocation at
    each moment of the step."""
    # step_hole is 0 wherever the 16-bit weights are not flattened (offload, adapters, ZeRO-3, fp32,
    # the default allocator): the guard is measured only where it is not
    hole = step_hole(job)
    if not (hole and job.stage == 1 and not job.plan.grad_ckpt and "step" in moments and "forward" in moments):
        return 0.0
    copy = 4.0 * job.psit / job.N
    partition = job.p * job.psit / job.N
    init_pool = moments["step"] - copy - partition + hole
    overflow = max(0.0, moments["forward"] - init_pool)
    if copy <= overflow:
        return 0.0
    return max(init_pool, moments["forward"]) + partition + copy
