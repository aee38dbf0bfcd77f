"""Host RAM is judged against what is free now (core/estimate/budget.py host_room): a plan the machine's
total has room for, but not its free RAM, does not fit, and the budget says why."""
from __future__ import annotations

from zerotui.core.estimate.budget import estimate, host_room, system_reserve
from zerotui.core.estimate.recommend import why_nothing_fits
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.model.spec import _llama_family_spec
from zerotui.core.plan.schema import Plan

GIB = 2**30
ROUND = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
         "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 1000, "tie_word_embeddings": False}


def box(total_gib: float, free_gib: float) -> Hardware:
    gpu = GpuInfo(index=0, name="test GPU", total_bytes=80 * GIB, free_bytes=80 * GIB, compute_capability=(9, 0),
                  bf16=True)
    return Hardware(gpus=[gpu], ram_total_bytes=int(total_gib * GIB), ram_available_bytes=int(free_gib * GIB))


def test_the_room_is_the_free_ram_within_the_total_less_the_systems_reserve():
    assert system_reserve(64 * GIB) == int(0.05 * 64 * GIB)       # 5% of the total...
    assert system_reserve(16 * GIB) == 2 * GIB                    # ...and at least 2 GiB
    assert system_reserve(4 * GIB) == GIB                         # (a quarter of a small machine)
    assert host_room(box(64, 60)) == 60 * GIB - system_reserve(64 * GIB)
    assert host_room(box(64, 0)) == 64 * GIB - system_reserve(64 * GIB)  # not known (stated): the total
    assert host_room(box(4, 0.5)) == 1            # the reserve takes it all: nothing fits (0 is "no figure")
    assert host_room(Hardware()) == 0             # nothing known: no host check


def test_a_plan_that_needs_more_than_is_free_does_not_fit_and_says_why():
    spec = _llama_family_spec("round", ROUND, "test")
    plan = Plan(model="round", stage=2, offload_optimizer="cpu", kernels="none")
    need = estimate(plan, box(256, 256), spec).cpu_bytes
    total = 2 * need / GIB
    roomy = estimate(plan, box(total, total), spec)
    busy = estimate(plan, box(total, 0.5 * need / GIB), spec)  # the rest held by other programs or /dev/shm
    assert roomy.fits and not busy.fits
    assert busy.cpu_capacity == max(1, int(0.5 * need) - system_reserve(int(total * GIB)))
    assert any("judged against what is free now" in w for w in busy.warnings)
    assert "(too much)" in busy.summary()
    lines = why_nothing_fits(plan.with_changes(seq_len=128), box(total, 0.01), spec)
    assert any(line.startswith("host RAM:") and "usable" in line for line in lines), lines


def _seed_rows():
    import sys

    from places import REPO
    sys.path.insert(0, str(REPO))
    from benchmarks.seed_scenarios.table import rows

    return rows([str(p) for p in sorted((REPO / "benchmarks/results").glob("seed-scenarios-full7b*.json"))])


def test_the_7b_runs_the_host_killed_are_not_promised_today():
    """The seed's 7B full fine-tune on a 24 GiB card as fit picked it on a 125.8 GiB H100 host (2026-12-05).
    Pinned (123.2 GiB estimated, 123.6 free) the kernel's OOM killer ended it at the first step with the
    worker at 119.6 GiB: the budget, with the system's reserve, no longer promises it on that machine.
    Unpinned it was ended at its second step by DeepSpeed's fp16 overflow check over the host's gradient
    partition (core/train/overflow_check.py replaces it); with zerotui's check the same plan ran every step,
    its host peak within 3% of the estimate, on a host with the same RAM."""
    from zerotui.core.plan.schema import plan_from_dict

    table = _seed_rows()
    killed = {(r["scenario"], r["file"]): r for r in table if r["host_killed"]}
    assert set(killed) == {("7b-full-fit24", "seed-scenarios-full7b-h100-2026-12-05.json"),
                           ("7b-full-fit24-unpinned", "seed-scenarios-full7bu-h100-2026-12-05.json")}
    row = killed[("7b-full-fit24", "seed-scenarios-full7b-h100-2026-12-05.json")]
    machine = Hardware(gpus=box(1, 1).gpus, ram_total_bytes=row["host_total"],
                       ram_available_bytes=row["host_free_at_start"])
    plan = plan_from_dict({**row["plan"], "model": "llama-2-7b", "data": "sample"})
    pinned = estimate(plan, machine)
    assert pinned.cpu_bytes <= row["host_free_at_start"]          # what fit judged it against then
    assert not pinned.fits and pinned.cpu_bytes > pinned.cpu_capacity
    assert pinned.cpu_capacity < 119.6 * GIB                        # where the worker was killed
    unpinned = estimate(plan.with_changes(pin_memory=False), machine)
    assert unpinned.fits
    # the unpinned plan with zerotui's check, forced (full7bl) and as fit now picks it there (full7bfit), and
    # in bf16 as fit picks it (full7bbf16, twenty-first session: the same host estimate, no overflow check)
    done = [r for r in table if r["plan"]["pin_memory"] is False and r["ran"]]
    assert {r["file"] for r in done} == {"seed-scenarios-full7bl-h200-2026-12-05.json",
                                         "seed-scenarios-full7bfit-h200-2026-12-05.json",
                                         "seed-scenarios-full7bbf16-h100-2026-12-05.json"}
    assert estimate(plan.with_changes(pin_memory=False, precision="bf16"), machine).cpu_bytes == unpinned.cpu_bytes
    assert all(unpinned.cpu_bytes >= 0.97 * r["host_rss_max"] for r in done)
