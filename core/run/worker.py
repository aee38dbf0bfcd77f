"""The process that owns one run: ``python -m zerotui.core.run.worker RUN_DIR [--resume]``.

It is started detached (its own session, stdio to ``worker.log``) by ``core/run/start.py``, so a dropped SSH
connection or a closed TUI never stops training. The training loop (``engine.train``) runs in a
background thread; the main thread owns everything that must keep working while a step takes minutes:

- signals: SIGTERM / SIGINT ask for a graceful stop (checkpoint, then end), a second one for a stop at
  the next step, a third ends the process at once; SIGHUP is ignored (a terminal going away is not a
  request to stop);
- ``control.jsonl``: stop, stop-now, pause, resume, checkpoint, each acknowledged by a ``control_ack``
  event (``core/run/inbox.py``);
- ``status.json``: the heartbeat, rewritten atomically every ~2 s;
- telemetry (``telemetry`` events) and the stall / host-RAM alerts.

Every rank records how it ended (``rank_records``: pid, the environment it got, state and reason) and
exits 0 for a completed or stopped run, 1 for a failed one. Only rank 0 writes events and the heartbeat;
other ranks (the DeepSpeed launcher starts one worker per GPU) only train and obey signals.

The supervisor (``run.supervisor``), whose child it always is, writes ``run_finished`` and the final
status once every process of the run has exited — also when a worker was killed and could say nothing.
``main`` refuses to run without one; if that supervisor is gone, the last rank left writes them (``orphan_end``)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.deepspeed.nvme_swap import swap_dir
from zerotui.core.plan import allocator
from zerotui.core.train.control import ControlState
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.launcher import SUPERVISOR_MODULE, WORKER_MODULE
from zerotui.core.train.distributed import single_process_env
from zerotui.core.run.rank_records import env_line, failure_cause, record_end, record_start, supervisor_pid
from zerotui.core.run.folder import HEARTBEAT_S, RunPaths, read_status, write_status
from zerotui.core.run.inbox import ControlInbox
from zerotui.core.run.monitor import RamWatch, RunTracker, StallWatch, describe_failure
from zerotui.core.run.orphan_end import record_orphan_end

#: Seconds between telemetry events; ZEROTUI_TELEMETRY_S overrides it (0 turns telemetry off, which is
#: how benchmarks/worker_overhead.py measures its cost).
TELEMETRY_S = 5.0
#: How often the main thread looks at control.jsonl: an acknowledgement arrives within this.
CONTROL_POLL_S = 0.25

TrainFn = Callable[..., Any]


def _telemetry_interval() -> float:
    try:
        return max(0.0, float(os.environ.get("ZEROTUI_TELEMETRY_S", TELEMETRY_S)))
    except ValueError:
        return TELEMETRY_S


def _engine_train() -> TrainFn:
    from zerotui.core.train.engine import train# imports torch, transformers, deepspeed: seconds, hence its own phase

    return train


class Worker:
    def __init__(self, paths: RunPaths, resume: bool = False, rank: int = 0,
                 train_fn: Optional[TrainFn] = None) -> None:
        self.paths = paths
        self.resume = resume
        self.rank = rank
        self.train_fn = train_fn
        self.control = ControlState()
        self.tracker = RunTracker()
        self.plan: Any = None
        self.hardware: Any = None
        self.writer: Optional[EventWriter] = None
        previous = read_status(paths)
        # The run's start survives resumes (for `zerotui runs`' duration); this worker's start is separate.
        self.started = float(previous.get("started") or time.time())
        self.worker_started = time.time()
        self._launched = float(previous.get("launched") or 0.0)
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.thread: Optional[threading.Thread] = None
        self._signals = 0
        self._signal_names: list[str] = []
        self._finish_lock = threading.Lock()
        self._finished = False
        self.rank_start: Optional[dict[str, Any]] = None  # this rank's record (several processes)
        self.supervisor = supervisor_pid()  # which writes the run's end
        self._pids: list[int] = [os.getpid()]
        self._pids_at = -1e18
        self.inbox = ControlInbox(paths, self.control, self.tracker, self._launched)

    # -- events -----------------------------------------------------------------------------------
    def emit(self, type_: str, /, **fields: Any) -> None:
        """What the engine gets (``train.emit.Emit``): every rank's tracker learns from each event; rank 0
        writes it to events.jsonl (other ranks have no writer). ``run_finished`` is the supervisor's."""
        if type_ == "run_finished":
            raise ValueError("run_finished is written by the supervisor, not by a worker")
        self.tracker.observe(type_, fields)
        if self.writer is not None:
            self.writer.emit(type_, **fields)

    def _status(self, state: str, **extra: Any) -> None:
        if self.rank != 0:
            return
        t = self.tracker
        pid, pids = self._run_pids()
        write_status(self.paths, pid=pid, pids=pids, state=state, phase=t.phase,
                     step=t.step, total_steps=t.total_steps, epoch=t.epoch, loss=t.loss,
                     tokens_per_s=t.tokens_per_s, checkpoint_step=t.last_checkpoint_step,
                     ram_fraction=t.ram_fraction, started=self.started, launched=self._launched,
                     worker_started=self.worker_started,
                     resumed=self.resume, **extra)

    def _run_pids(self) -> tuple[int, list[int]]:
        """(the pid to signal, every pid of the run): the supervisor, and it with all its run processes
        (launcher and ranks), refreshed every few heartbeats — ranks start once."""
        if self.supervisor is None:  # only in-process tests build a Worker without one
            return os.getpid(), [os.getpid()]
        now = time.monotonic()
        if now - self._pids_at >= 5 * HEARTBEAT_S:
            from zerotui.core.run.supervisor import run_processes

            self._pids_at = now
            found = [p for p, _role, _rank in run_processes(self.supervisor)]
            self._pids = sorted({self.supervisor, os.getpid(), *found})
        return self.supervisor, self._pids

    def live_state(self) -> str:
        if self.control.stopping:
            return "stopping"
        if self.control.paused:
            return "paused"
        return "running" if self.tracker.training else "starting"

    # -- signals ----------------------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: Any) -> None:
        # Only flags here: the main thread may hold the event writer's lock when the signal arrives.
        self._signals += 1
        self._signal_names.append(signal.Signals(signum).name)
        if self._signals == 1:
            self.control.request_stop(f"{signal.Signals(signum).name} received")
        else:
            self.control.request_stop(f"{signal.Signals(signum).name} received twice", now=True)

    def _install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    # -- control.jsonl ----------------------------------------------------------------------------
    def _poll_control(self) -> None:
        for ack in self.inbox.poll():
            self.emit("control_ack", **ack)

    # -- the training thread ----------------------------------------------------------------------
    def _train(self) -> None:
        try:
            fn = self.train_fn
            if fn is None:
                self.emit("phase", name="importing libraries", done=None, total=None)
                self._prefetch()
                fn = _engine_train()
            self.result = fn(self.plan, self.paths, self.emit, self.control,
                             hardware=self.hardware, resume=self.resume)
        except BaseException as exc:  # noqa: BLE001 - every failure must end as run_finished
            self.error = exc
            if self.rank_start is not None:
                # Recorded now, before this rank tears its process group down: the others see the
                # connection drop at once, and the supervisor must find the first cause written first.
                reason, cause = self._failure_reason(exc), failure_cause(exc)
                self._guard("rank record", lambda: record_end(
                    self.paths.root, self.rank, self.rank_start or {}, "failed", reason, cause, self.tracker.step))
            where = self.tracker.where() + (f" on rank {self.rank}" if self.rank_start is not None else "")
            sys.stderr.write(f"zerotui worker: the training loop failed in {where}:\n")
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()

    def _allocator(self) -> None:
        """PyTorch's allocator setting (core/plan/allocator.py), before torch is imported, on every rank."""
        if allocator.set_for(os.environ, getattr(self, "hardware", None)):
            self.emit("log", message=allocator.NOTE)

    def _prefetch(self) -> None:
        """Read the weights (and, resuming, the checkpoint) ahead while the libraries import."""
        from zerotui.core.train.prefetch import start_for_run

        start_for_run(self.plan.model, self.paths.checkpoints if self.resume else None, self.rank)

    def _failure_reason(self, exc: BaseException) -> str:
        return describe_failure(exc, self.tracker.where(), self.plan, self.hardware, self.paths.root).reason

    # -- main -------------------------------------------------------------------------------------
    def run(self) -> int:
        self._install_signals()  # first: a client that sees our status may signal us at once
        self._guard("rank record", self._record_start)
        if self.rank == 0:
            self.writer = EventWriter(self.paths.events)
            self.inbox.skip_acknowledged()
            self._status("starting")
        try:
            self._load_inputs()
        except BaseException as exc:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            return self._finish("failed", describe_failure(exc, "reading the run folder").reason)
        single_process_env()
        if self.train_fn is None:  # before any thread: changing the environment under a reader is unsafe
            self._allocator()
        self.thread = threading.Thread(target=self._train, name="zerotui-train", daemon=True)
        self.thread.start()
        try:
            self._watch()
        finally:
            self._shutdown_distributed()
        return self._conclude()

    def _record_start(self) -> None:
        self.rank_start = record_start(self.paths.root, self.rank)
        # What this rank's environment holds (NVLink multicast off, the collective timeout, its devices):
        # worker.log shows it for every rank, the rank's record keeps it for tools and tests.
        sys.stderr.write(env_line(self.rank) + "\n")
        sys.stderr.flush()

    def _load_inputs(self) -> None:
        from zerotui.core.hardware.types import Hardware
        from zerotui.core.plan.schema import load_plan

        from zerotui.core.run.run_files import read_json_file

        # The run folder's own files, bounded and never through a link (core/run/run_files.py).
        self.plan = load_plan(self.paths.plan, follow=False)
        if self.paths.hardware.exists():
            self.hardware = Hardware.from_dict(read_json_file(self.paths.hardware))

    def _watch(self) -> None:
        """The main thread's loop: until the training thread ends (or a third signal)."""
        assert self.thread is not None
        telemetry_s = _telemetry_interval()
        stall = StallWatch(self.plan.stall_minutes)
        ram = RamWatch(self.plan.offload_optimizer)
        sampler = self._sampler() if (self.rank == 0 and telemetry_s > 0) else None
        next_beat = next_sample = time.monotonic()
        last_state = ""
        try:
            while self.thread.is_alive():
                if self._signals >= 3:
                    self._hard_exit()
                now = time.monotonic()
                if self.rank == 0:
                    self._guard("control", self._poll_control)
                    state = self.live_state()
                    if now >= next_beat or state != last_state:  # a change shows at once, not 2 s later
                        next_beat, last_state = now + HEARTBEAT_S, state
                        self._guard("heartbeat", lambda: self._status(state))
                        alert = stall.check(self.tracker, self.control.paused, self.thread)
                        if alert:
                            self.emit("alert", **alert)
                    if sampler is not None and now >= next_sample:
                        next_sample = now + telemetry_s
                        self._guard("telemetry", lambda: self._telemetry(sampler, ram))
                    elif sampler is None and now >= next_sample:
                        next_sample = now + max(telemetry_s, HEARTBEAT_S * 5)
                        self._guard("ram check", lambda: self._ram_only(ram))
                self.thread.join(CONTROL_POLL_S)
        finally:
            if sampler is not None:
                self._guard("telemetry close", sampler.close)

    def _guard(self, what: str, fn: Callable[[], Any]) -> None:
        """A failing heartbeat or sampler must never end a run that trains fine: log it and go on."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            sys.stderr.write(f"zerotui worker: {what} failed: {type(exc).__name__}: {exc}\n")

    def _sampler(self) -> Any:
        try:
            from zerotui.core.hardware.telemetry import TelemetrySampler

            # All GPUs this process can see: the launcher already narrowed CUDA_VISIBLE_DEVICES to the
            # plan's. Under the DeepSpeed launcher every rank is a child of rank 0's parent (launch.py),
            # so that tree's RSS is the whole run's.
            several = int(os.environ.get("WORLD_SIZE", "1") or 1) > 1
            swap = swap_dir(self.plan.nvme_path, self.paths.root) if self.plan.uses_nvme() else None  # ds_config's
            return TelemetrySampler(gpu_indices=None, nvme_path=swap,
                                    root_pid=os.getppid() if several else None)
        except Exception as exc:  # noqa: BLE001 - no sampler: training goes on without telemetry
            sys.stderr.write(f"zerotui worker: no telemetry ({type(exc).__name__}: {exc})\n")
            return None

    def _telemetry(self, sampler: Any, ram: RamWatch) -> None:
        sample = sampler.sample()
        self.emit("telemetry", **sample)
        self._check_ram(ram, sample.get("ram_used"), sample.get("ram_total"), sample.get("rss"))

    def _ram_only(self, ram: RamWatch) -> None:
        import psutil

        vm = psutil.virtual_memory()
        self._check_ram(ram, vm.total - vm.available, vm.total, None)

    def _check_ram(self, ram: RamWatch, used: Any, total: Any, rss: Any) -> None:
        if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total > 0:
            self.tracker.ram_fraction = round(used / total, 3)
        alert = ram.check(used, total, rss)
        if alert:
            self.emit("alert", **alert)

    def _hard_exit(self) -> None:
        # The training thread may be stuck where no flag reaches it (a hung collective, a build lock):
        # record the end, then leave without waiting for it.
        try:
            self._finish("stopped", f"ended at once by a third signal ({', '.join(self._signal_names)}); "
                                    "no checkpoint was saved after the last one")
            sys.stderr.flush()
        finally:
            os._exit(0)

    def _shutdown_distributed(self) -> None:
        """DeepSpeed's gloo/NCCL groups abort the process (SIGABRT) at exit unless destroyed."""
        torch = sys.modules.get("torch")
        if torch is None or self.thread is None or self.thread.is_alive():
            return
        try:
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.destroy_process_group()
        except Exception as exc:  # noqa: BLE001
            sys.stderr.write(f"zerotui worker: destroy_process_group failed: {exc}\n")

    def _conclude(self) -> int:
        if self.error is not None:
            failure = describe_failure(self.error, self.tracker.where(), self.plan, self.hardware, self.paths.root)
            if failure.kind.startswith("oom"):
                self.emit("alert", kind="oom", message=failure.reason, hint=failure.hint)
            return self._finish("failed", failure.reason)
        state = str(getattr(self.result, "state", "") or "completed")
        reason = str(getattr(self.result, "reason", "") or "")
        if state not in ("completed", "stopped", "failed"):
            reason = f"the loop returned an unknown state {state!r}; {reason}".rstrip("; ")
            state = "failed"
        if state == "stopped" and not reason:
            reason = self.control.reason or "stopped"
        step = getattr(self.result, "step", None)
        if isinstance(step, int):
            self.tracker.step = step
        return self._finish(state, reason or ("reached the last step" if state == "completed" else state))

    def _finish(self, state: str, reason: str) -> int:
        with self._finish_lock:
            if self._finished:
                return 0 if state in ("completed", "stopped") else 1
            self._finished = True
        self.tracker.phase = "finished"
        cause = failure_cause(self.error) if self.error is not None else ""
        if self.rank_start is not None and not (self.error is not None and state == "failed"):
            # (A failure of the loop was recorded when it happened, with its own time.)
            self._guard("rank record", lambda: record_end(self.paths.root, self.rank, self.rank_start or {},
                                                          state, reason, cause, self.tracker.step))
        if self.rank == 0:  # the supervisor writes run_finished and the final status, unless it is gone
            if self.writer is not None:
                self._guard("closing events.jsonl", self.writer.close)
            self._guard("status", lambda: self._status("stopping", reason=reason))
        end = (self.paths, self.supervisor, state, reason, self.tracker.step)  # any rank may be the last one left
        self._guard("end", lambda: record_orphan_end(*end, rank=self.rank))  # orphan_end.py decides who writes
        sys.stderr.write(f"zerotui worker: run {state}: {reason}\n")
        return 0 if state in ("completed", "stopped") else 1


def main(argv: Optional[list[str]] = None, train_fn: Optional[TrainFn] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zerotui.core.run.worker",
                                     description="Run one zerotui training run (started by `zerotui train`).")
    parser.add_argument("run_dir", type=Path, nargs="?")
    parser.add_argument("--resume", action="store_true", help="continue from the newest complete checkpoint")
    parser.add_argument("--spare", type=Path, help="import everything, then wait for a run (core/run/spare.py)")
    args = parser.parse_args(argv)
    if args.spare is not None and supervisor_pid() is not None:
        from zerotui.core.run.spare_worker import main as spare_main

        return spare_main(args.spare, lambda claimed: main(claimed, train_fn))
    if args.run_dir is None:
        parser.error("the run folder is required")
    paths = RunPaths(args.run_dir.resolve())
    if supervisor_pid() is None:
        sys.stderr.write(f"zerotui worker: no supervisor; start runs with `zerotui train` (or: python -m "
                         f"{SUPERVISOR_MODULE} {paths.root} --direct -- python -m {WORKER_MODULE} {paths.root})\n")
        return 2
    if not paths.plan.exists():
        sys.stderr.write(f"zerotui worker: {paths.plan} does not exist; start runs with `zerotui train`\n")
        return 2
    rank = int(os.environ.get("RANK", "0") or 0)
    return Worker(paths, resume=args.resume, rank=rank, train_fn=train_fn).run()


if __name__ == "__main__":
    sys.exit(main())
