"""The optimizer-step loop: forward / ``engine.backward`` / ``engine.step`` over micro-batches, with the
events, evaluations, checkpoints and control decisions that happen at step boundaries.

The device is synchronised only every ``log_interval`` steps (and at evals and saves): losses,
non-finite flags and counters accumulate in device tensors in between (a sync per step would stall
the GPU queue). Token and
FLOP counts come from the CPU-side batches, so they cost no sync either.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from zerotui.core.train.badsteps import OverflowRun, is_scale_floor_error, resume_point
from zerotui.core.train.checkpoint import plan_hash
from zerotui.core.model.flops import flops_per_token
from zerotui.core.train.alloc_release import ReleaseWatch
from zerotui.core.train.lossscale import ScaleWatch, live_loss_scale, loss_scale_is_dynamic
from zerotui.core.train.stage0_scale import scaled_for_backward
from zerotui.core.train.rankflags import FlagSync, StepFlags
from zerotui.core.data.sampler import DataPosition
from zerotui.core.data.tokenise import IGNORE



@dataclass
class RunResult:
    """How a training run ended, as the loop returns it to the worker."""

    state: str          # completed | stopped | failed
    reason: str
    step: int


class TrainLoop:
    def __init__(self, *, plan: Any, engine: Any, loaded: Any, data: Any, order: Any, total: int, rank: int,
                 world: int, emit: Callable[..., Any], control: Any, ckpt: Any, paths: Any,
                 rank0_wait: Callable[[], Any] | None = None) -> None:
        self.plan, self.engine, self.loaded, self.data, self.order = plan, engine, loaded, data, order
        self.total, self.rank, self.world, self.emit, self.control = total, rank, world, emit, control
        self.ckpt, self.paths = ckpt, paths
        # Several ranks: a barrier (long timeout) after each save, while rank 0 alone fsyncs, marks and
        # prunes the checkpoint; without it the others would wait in the next step's collective, whose
        # timeout is meant for a hung peer, not for a slow disk (core/run/launcher.py).
        self.rank0_wait = rank0_wait
        self.device = engine.device
        # Pinned host memory makes the non_blocking copy below truly asynchronous (as the HF Trainer's
        # DataLoader does with pin_memory=True); pointless on a CPU-only run.
        self.pin = torch.device(self.device).type == "cuda"
        self.step = 0
        self.elapsed_before = 0.0           # training seconds of earlier workers of this run (resume)
        self.started = time.monotonic()
        self.tokens_seen = 0                # non-padding tokens of all ranks, as of the last step event
        self.sync = FlagSync(world, rank, control, plan.save_minutes)
        self.scale_watch = ScaleWatch(plan.fp16_min_loss_scale, 2.0 ** plan.fp16_initial_scale_power)
        self.release_watch = ReleaseWatch()
        self.plan_hash = plan_hash(plan)
        self._reset_interval()
        self.streak = torch.zeros((), dtype=torch.int64, device=self.device)
        self.first_bad = torch.zeros((), dtype=torch.int64, device=self.device)
        self._warned_streak = 0
        self._skipped_at_log = 0
        self.overflows = OverflowRun()
        self.monitor = getattr(engine, "monitor", None)

    # -- resume -----------------------------------------------------------------------------------
    def restore(self, client: dict) -> None:
        self.step = int(client["step"])
        self.order.pos = DataPosition.from_dict(client.get("data_position") or {})
        self.elapsed_before = float(client.get("elapsed_s") or 0.0)
        self.tokens_seen = int(client.get("tokens_seen") or 0)
        # DeepSpeed restores its running skipped-step count with the checkpoint: count intervals from it.
        self._skipped_at_log = int(getattr(self.engine, "skipped_steps", 0) or 0)
        self.overflows = OverflowRun(self._skipped_at_log)
        if client.get("plan_hash") not in (None, self.plan_hash):
            self.emit("log", message="the plan changed since this checkpoint was written; continuing with "
                                     "the current plan")
        self.sync.saved()

    def client_state(self) -> dict:
        return {"step": self.step, "epoch": self.order.pos.epoch, "data_position": self.order.pos.to_dict(),
                "elapsed_s": self.elapsed_before + (time.monotonic() - self.started),
                "plan_hash": self.plan_hash, "total_steps": self.total, "tokens_seen": self.tokens_seen}

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> RunResult:
        self.engine.train()
        if self.step < self.total:
            self.emit("phase", name="first step", done=None, total=None)
        self._reset_interval()
        first = True
        while self.step < self.total:
            try:
                self._one_step()
            except Exception as exc:  # noqa: BLE001 - only DeepSpeed's fp16 floor is handled here
                if not is_scale_floor_error(exc):
                    raise
                return self._stop_at_scale_floor()
            self.ckpt.poll()  # a background checkpoint that ended: its event, or its failure
            if first:  # start-up is over: clients stop showing "first step" before the first step event
                first = False
                self.ckpt.started()
                self.emit("phase", name="training", done=self.step, total=self.total)
            logged = self.step % self.plan.log_interval == 0 or self.step == self.total
            if logged and (result := self._log()) is not None:
                return result
            if self.plan.eval_interval and self.step % self.plan.eval_interval == 0 and self.step < self.total:
                self._timed(self._evaluate)
            # After the log and eval, so a request made meanwhile applies at this boundary.
            flags = self.sync.exchange()
            if (flags.stop or flags.stop_now) and not logged and (result := self._log()) is not None:
                return result
            if (result := self._boundary(flags)) is not None:
                return result
        return self._finish()

    def _one_step(self) -> None:
        engine, gas = self.engine, self.plan.grad_accum
        bad = torch.zeros((), dtype=torch.bool, device=self.device)
        for micro in range(gas):
            idx = self.order.next()
            batch = self.data.batch(self.data.train, idx)
            # Packed batches, and unpacked ones of the Llama family (collate's causal), have no attention_mask:
            # they carry their count ("token_count", no model input).
            ntok = int(batch.pop("token_count")) if "token_count" in batch else int(batch["attention_mask"].sum())
            width = int(batch["input_ids"].shape[1])
            self.i_tokens += ntok
            self.i_flops += ntok * self._fpt(width)
            batch = {k: (v.pin_memory() if self.pin else v).to(self.device, non_blocking=True)
                     if isinstance(v, torch.Tensor) else v for k, v in batch.items()}  # flash's max_length_*: ints
            loss = engine(**batch).loss
            # fp16 at ZeRO-0: the scale DeepSpeed's backward leaves out (stage0_scale.py)
            engine.backward(scaled_for_backward(loss, engine.optimizer, self.plan.precision, gas))
            if micro == gas - 1:
                # The rate this update applies (the scheduler moves on inside step()).
                self.i_lr = float(engine.optimizer.param_groups[0]["lr"])
            engine.step()
            if micro == gas - 1:
                self.overflows.after_step(self.step + 1, int(getattr(engine, "skipped_steps", 0) or 0))
            value = loss.detach().float()
            finite = torch.isfinite(value)
            self.i_loss = self.i_loss + torch.where(finite, value, torch.zeros_like(value))
            self.i_count = self.i_count + finite.to(torch.float32)
            bad = bad | ~finite
        self.step += 1
        self.i_steps += 1
        self.streak = torch.where(bad, self.streak + 1, torch.zeros_like(self.streak))
        self.first_bad = torch.where(bad & (self.streak == 1), torch.full_like(self.first_bad, self.step),
                                     self.first_bad)
        self.i_bad = self.i_bad + bad.to(torch.int64)

    def _fpt(self, width: int) -> float:
        ld = self.loaded
        return flops_per_token(ld.params_matmul, ld.params_trainable, ld.num_layers, ld.hidden_size, width,
                               lora=ld.is_lora, recompute=self.plan.grad_ckpt)

    def _reset_interval(self) -> None:
        dev = getattr(self, "device", "cpu")
        self.i_loss = torch.zeros((), dtype=torch.float32, device=dev)
        self.i_count = torch.zeros((), dtype=torch.float32, device=dev)
        self.i_bad = torch.zeros((), dtype=torch.int64, device=dev)
        self.i_tokens = 0
        self.i_flops = 0.0
        self.i_steps = 0
        self.i_lr = float("nan")
        self.i_start = time.monotonic()
        self.i_excluded = 0.0  # seconds spent in evals, saves and pauses: not training throughput

    def _timed(self, fn: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        try:
            return fn()
        finally:
            self.i_excluded += time.monotonic() - t0

    # -- logging ----------------------------------------------------------------------------------
    def _log(self) -> RunResult | None:
        """The one device sync of the interval: a step event, and the non-finite-loss decision."""
        if self.i_steps == 0:
            return None
        sums = torch.stack([self.i_loss, self.i_count, self.i_bad.float(),
                            torch.tensor(float(self.i_tokens), device=self.device),
                            torch.tensor(self.i_flops, device=self.device)])
        worst = torch.stack([self.streak, self.first_bad])
        if self.world > 1:
            import torch.distributed as dist

            dist.all_reduce(sums)
            dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        loss_sum, count, n_bad, tokens, flops = sums.tolist()
        self.tokens_seen += int(tokens)  # all ranks' non-padding tokens
        streak, first_bad = (int(x) for x in worst.tolist())
        elapsed = max(1e-9, time.monotonic() - self.i_start - self.i_excluded)
        steps = self.i_steps
        samples = steps * self.plan.sequences_per_step(self.world)
        loss = loss_sum / count if count else float("nan")
        grad_norm = _as_float(self.engine.get_global_grad_norm())
        scale = live_loss_scale(self.engine.optimizer, self.plan.precision)
        dynamic = loss_scale_is_dynamic(self.engine.optimizer, self.plan.precision)
        skipped_total = int(getattr(self.engine, "skipped_steps", 0) or 0)
        # `skipped` counts overflow-skipped optimizer steps in this logging interval (what a chart marks);
        # `skipped_total` is DeepSpeed's running count since the engine started.
        skipped = skipped_total - self._skipped_at_log
        memory = self._memory_peaks()
        self.emit("step", step=self.step, epoch=round(self.order.epoch_float(), 4), loss=loss, lr=self.i_lr,
                  grad_norm=grad_norm, loss_scale=scale, loss_scale_dynamic=dynamic, skipped=skipped,
                  skipped_total=skipped_total,
                  samples_per_s=samples / elapsed, tokens_per_s=tokens / elapsed,
                  tflops=flops / elapsed / self.world / 1e12, step_time=elapsed / steps,
                  nonfinite=int(n_bad), tokens=self.tokens_seen,
                  elapsed_s=round(self.elapsed_before + time.monotonic() - self.started, 1), **memory)
        self._monitor([("Train/Samples/train_loss", loss), ("Train/Samples/lr", self.i_lr),
                       ("Train/Samples/tokens_per_s", tokens / elapsed)])
        alert = self.scale_watch.check(scale, skipped, dynamic)
        self._skipped_at_log = skipped_total
        for a in (alert, self.release_watch.check(memory.get("gpu_alloc_retries"), self.step)):
            if a:
                self.emit("alert", **a)
        self._reset_interval()
        return self._check_nonfinite(streak, first_bad)

    def _memory_peaks(self) -> dict[str, int]:
        """This rank's allocator peaks since the process started (what the budget predicts; reading them
        does not synchronise the GPU), and how often the allocator had to hand cached memory back to the
        driver and retry an allocation: under a cap, a pool whose free holes would take it over the line
        does that rather than fail (docs/estimator-log.md, "The cap and the allocator's release"). Nothing
        on the CPU."""
        if torch.device(self.device).type != "cuda":
            return {}
        return {"gpu_mem_allocated_peak": int(torch.cuda.max_memory_allocated(self.device)),
                "gpu_mem_reserved_peak": int(torch.cuda.max_memory_reserved(self.device)),
                "gpu_alloc_retries": int(torch.cuda.memory_stats(self.device).get("num_alloc_retries", 0))}

    def _check_nonfinite(self, streak: int, first_bad: int) -> RunResult | None:
        limit = self.plan.max_nonfinite
        if streak == 0:
            self._warned_streak = 0
            return None
        if streak >= limit:
            # A clean stop, not a failure: nothing is saved now (the weights may be spoiled), and the
            # newest checkpoint is from before the first bad step (core/train/badsteps.py says why).
            reason = (f"loss was not finite for {streak} optimizer steps in a row (from step {first_bad}); "
                      f"stopped after {limit}; {resume_point(self._settled_checkpoint(), first_bad)}")
            self.emit("alert", kind="nonfinite_loss", message=reason,
                      hint="lower lr or add warmup_steps in the run's plan.yaml (or use bf16 instead of fp16), "
                           "then `zerotui resume`")
            return RunResult("stopped", reason, self.step)
        if streak > self._warned_streak:
            self._warned_streak = streak
            self.emit("alert", kind="nonfinite_loss",
                      message=f"loss not finite for {streak} step(s) in a row at step {self.step} "
                              f"(the run stops after {limit})",
                      hint="watch the next steps; lower --lr if it repeats")
        return None

    def _settled_checkpoint(self) -> Optional[int]:
        """The newest complete checkpoint's step, once a background write in flight has ended (a message
        that names where a resume starts must not name the one before a checkpoint about to complete)."""
        self.ckpt.wait()
        return self.ckpt.last_saved_step

    def _stop_at_scale_floor(self) -> RunResult:
        """DeepSpeed raised at the fp16 loss-scale floor: every update since the storm began was skipped,
        so the weights are still those from before it; stop cleanly instead of crashing."""
        if (logged := self._log()) is not None:  # report the steps since the last step event first
            return logged
        first = self.overflows.first or self.step + 1
        run = self.overflows.length + 1  # the step that raised overflowed too
        reason = (f"fp16 loss scale reached its floor ({self.plan.fp16_min_loss_scale:g}) and gradients still "
                  f"overflow: {run} optimizer steps in a row were skipped (from step {first}); stopped at step "
                  f"{self.step}; {resume_point(self._settled_checkpoint(), first)}")
        self.emit("alert", kind="loss_scale_collapse", message=reason,
                  hint="use --precision bf16 if the GPU supports it (Ampere or newer), or lower lr in the run's "
                       "plan.yaml, then `zerotui resume`")
        return RunResult("stopped", reason, self.step)

    def _monitor(self, pairs: list[tuple[str, float]]) -> None:
        """TensorBoard / CSV / W&B through DeepSpeed's monitor: DeepSpeed >= 0.18.3 no longer writes the
        training loss there itself (deepspeed/runtime/engine.py), so zerotui does."""
        mon = self.monitor
        if self.rank != 0 or mon is None or not getattr(mon, "enabled", False):
            return
        x = int(getattr(self.engine, "global_samples", self.step))
        mon.write_events([(name, float(v), x) for name, v in pairs if v is not None and math.isfinite(v)])

    # -- evaluation -------------------------------------------------------------------------------
    def _evaluate(self) -> None:
        ev = self.data.eval
        if ev is None or len(ev) == 0:
            return
        mb, world = self.plan.micro_batch, self.world
        n_batches = min(self.plan.eval_batches, len(ev) // (mb * world))
        if n_batches == 0:
            if world > 1:
                return  # fewer eval rows than one batch per rank: every rank must run the same forwards
            n_batches, mb = 1, len(ev)
        total = torch.zeros(2, dtype=torch.float32, device=self.device)
        self.engine.eval()
        with torch.no_grad():
            for b in range(n_batches):
                start = (b * world + self.rank) * mb
                batch = self.data.batch(ev, list(range(start, start + mb)))
                batch.pop("token_count", None)  # packed batches: a count, no model input
                targets = int((batch["labels"][:, 1:] != IGNORE).sum())
                batch = {k: v.to(self.device, non_blocking=True) if isinstance(v, torch.Tensor) else v
                         for k, v in batch.items()}
                loss = self.engine(**batch).loss.detach().float()
                total += torch.stack([loss * targets, torch.tensor(float(targets), device=self.device)])
        self.engine.train()
        if world > 1:
            import torch.distributed as dist

            dist.all_reduce(total)
        loss_sum, n = total.tolist()
        loss = loss_sum / n if n else float("nan")
        ppl = math.exp(loss) if math.isfinite(loss) and loss < 50 else None
        self.emit("eval", step=self.step, loss=loss, perplexity=ppl, batches=n_batches)
        self._monitor([("Eval/loss", loss)])

    # -- step boundary: control and checkpoints ---------------------------------------------------
    def _boundary(self, flags: StepFlags) -> RunResult | None:
        paused_said = False
        while True:
            if flags.stop_now:
                return RunResult("stopped", self._reason("stopped at once") + "; no checkpoint saved", self.step)
            if flags.stop:
                self._timed(lambda: self._save("stop"))
                return RunResult("stopped", self._reason("stop requested"), self.step)
            if flags.checkpoint:
                self._timed(lambda: self._save("requested"))
            elif flags.save_due or (self.plan.save_interval and self.step % self.plan.save_interval == 0
                                    and self.step < self.total):
                self._timed(lambda: self._save("interval"))
            if not flags.paused:
                return None
            if not paused_said:
                paused_said = True
                self.emit("log", message=f"paused after step {self.step}")
            t0 = time.monotonic()
            flags = self.sync.wait_while_paused()
            self.i_excluded += time.monotonic() - t0
            if not flags.paused:
                self.emit("log", message=f"resumed at step {self.step}")

    def _reason(self, default: str) -> str:
        return (self.control.reason or default) if self.rank == 0 else default

    def _save(self, why: str) -> None:
        if self.ckpt.last_saved_step == self.step:
            return
        if int(self.streak.item()) > 0:  # never save weights a non-finite step may have spoiled
            self.emit("log", message=f"checkpoint at step {self.step} skipped: the last loss was not finite")
            return
        self.emit("phase", name="saving checkpoint", done=None, total=None)
        # Interval and requested saves go on in the background; a stop or the end waits for the files.
        background = self.plan.save_background and why not in ("stop", "end")
        self.ckpt.save(self.step, self.client_state(), why, background=background)
        if self.rank0_wait is not None:
            self.rank0_wait()
        self.sync.saved()

    def _finish(self) -> RunResult:
        self._evaluate()  # the loop's evals skip the last step: this one covers it
        self._save("end")
        if self.plan.save_final:
            self.emit("phase", name="writing final model", done=None, total=None)
            from zerotui.core.train.final import write_final

            path = write_final(self.engine, self.loaded, self.plan, self.paths.final, self.step, self.rank)
            self.emit("log", message=f"final model written to {path}")
        return RunResult("completed", f"reached step {self.total}", self.step)


def _as_float(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value.item() if hasattr(value, "item") else value)
    except (TypeError, ValueError):
        return None
