"""The supervisor of a run: ``python -m zerotui.core.run.supervisor RUN_DIR [--local-ranks N | --direct] -- ARGV``.

``zerotui.core.run.start`` starts it, detached, for every run; it starts ``ARGV`` as its child and stays
until every process of the run has exited. ``ARGV`` is the worker itself for one process (``--direct``:
the child is rank 0), or DeepSpeed's launcher (``python -m deepspeed.launcher.runner ... --module
zerotui.core.run.worker RUN_DIR``) for several. Why it exists (docs/multi_gpu.md has the long form):

- It is the one writer of ``run_finished`` and of the final status.json, for every run. A worker cannot
  be: it may be killed (kill -9, the kernel's OOM killer) with no chance to say so, and DeepSpeed's
  launcher, which ends the other ranks when one exits non-zero (SIGTERM, then SIGKILL after 30 s;
  deepspeed/launcher/launch.py), records neither which rank died nor why, and the rank it kills may be
  rank 0, the only writer of events. So ``run_finished`` is written here, after the last process is
  gone, from what each rank recorded (``rank_records``) and what was seen from outside (a rank that
  vanished, its wait status).
- It watches that every process ends: ranks that linger after rank 0 has ended, or after a rank
  failed, are ended; then status.json lists every pid of the run and its final state, and NVML is asked
  whether any of them still holds GPU memory (skipped where there is no NVML).
- Signals sent to it (``kill PID`` of the pid ``zerotui train`` printed) mean what they mean for a
  single worker: the first two go to rank 0 (graceful stop, then stop at the next step), a third ends
  every process at once. SIGHUP is ignored.

It is a subreaper (prctl PR_SET_CHILD_SUBREAPER): if the launcher itself is killed, its ranks become the
supervisor's children instead of init's, so they are still found, waited for and ended.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from zerotui.core.deepspeed.memlock import mlock_failure
from zerotui.core.deepspeed.nvme_swap import full_disk_cause, remove_swap
from zerotui.core.errors import ZeroTuiError
from zerotui.core.plan.schema import Plan, load_plan
from zerotui.core.run.deathwatch import DeathWatch
from zerotui.core.run.notify import Notifier, notifier_for
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.rank_records import SUPERVISOR_ENV, clear_records, describe_wait_status, proc_state, read_records
from zerotui.core.run.settled import last_alert_note
from zerotui.core.run.verdict import decide
from zerotui.core.run.end_status import run_progress, write_end_status
from zerotui.core.run.folder import RunPaths
from zerotui.core.run.run_files import read_json_file

POLL_S = 0.2
#: After rank 0 has ended, the other ranks get this long to exit by themselves (they only tear down
#: their process group) before they are ended.
LINGER_S = 60.0
#: After a rank died, DeepSpeed's launcher ends the others within ~31 s (1 s poll + 30 s SIGTERM grace,
#: launch.py); this is the safety net for when the launcher itself is gone or stuck.
FAILURE_GRACE_S = 45.0
#: Between SIGTERM and SIGKILL when the supervisor ends processes itself.
TERM_WAIT_S = 5.0
#: Re-scan the process tree this often once every local rank is known (ranks start once).
RESCAN_S = 5.0
#: Command lines that make a process part of the run (the launcher's helpers, e.g. a JIT build's
#: compiler, come and go and are not listed).
RUN_MODULES = ("deepspeed.launcher", "zerotui.core.run.worker")
WORKER_MODULE = "zerotui.core.run.worker"


def set_subreaper() -> bool:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except Exception:  # noqa: BLE001 - not Linux: orphans go to init, the launcher still ends them
        return False


def run_processes(root_pid: int) -> list[tuple[int, str, Optional[int]]]:
    """(pid, role, rank) of the run's processes under ``root_pid``: 'launcher' or 'rank'."""
    import psutil

    out = []
    try:
        children = psutil.Process(root_pid).children(recursive=True)
    except psutil.Error:
        return out
    for p in children:
        try:
            cmd = " ".join(p.cmdline())
            if WORKER_MODULE in cmd:
                raw = p.environ().get("RANK", "")
                out.append((p.pid, "rank", int(raw) if raw.isdigit() else None))
            elif any(m in cmd for m in RUN_MODULES):
                out.append((p.pid, "launcher", None))
        except psutil.Error:
            continue  # exited while we looked
    return out


class Supervisor:
    def __init__(self, paths: RunPaths, argv: list[str], local_ranks: int = 0, direct: bool = False,
                 child: Optional[subprocess.Popen] = None, signals: int = 0) -> None:
        self.paths = paths
        self.argv = argv
        self.direct = direct                         # the child is the worker itself, rank 0
        self.local_ranks = 1 if direct else local_ranks
        self.child = child                           # already started: a spare's worker (core/run/spare.py)
        self.seen: dict[int, str] = {}              # every pid of the run seen, with its role
        self.rank_pids: dict[int, int] = {}          # local rank -> pid
        self.deaths: dict[int, dict[str, Any]] = {}  # rank -> {pid, at, status}
        self.signals = signals                       # a spare's supervisor may have had one already
        self.signal_names: list[str] = ["SIGTERM"] * signals
        self._forwarded = 0
        self.forced = ""                             # set when a third signal ended everything
        self.notes: list[str] = []
        self._scanned_at = 0.0
        self._rank0_end_seen: Optional[float] = None
        self._failure_seen: Optional[float] = None
        self._orphan_status: dict[int, int] = {}     # wait status of ranks we reaped ourselves
        self.deathwatch = DeathWatch()               # catches a rank's wait status as it exits
        self.notifier: Optional[Notifier] = None
        self._records_at = 0.0

    # -- signals -----------------------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.signals += 1  # only count here; the loop acts on it
        self.signal_names.append(signal.Signals(signum).name)

    def _install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _act_on_signals(self) -> None:
        while self._forwarded < self.signals:
            self._forwarded += 1
            if self._forwarded >= 3:
                self.forced = (f"ended at once by a third signal ({', '.join(self.signal_names[:3])}); "
                               "no checkpoint was saved after the last one")
                self._log("third signal: ending every process of the run now")
                self._end_tree(gentle=False)
                return
            pid = self.rank_pids.get(0)
            if pid is not None and proc_state(pid)[0] == "alive":
                self._log(f"{('first', 'second')[self._forwarded - 1]} signal "
                          f"({self.signal_names[self._forwarded - 1]}): passed on to rank 0 (pid {pid})")
                os.kill(pid, signal.SIGTERM)
            else:  # no rank 0 yet (still importing): nothing to checkpoint, end the start-up
                self.forced = "stopped by a signal before training started"
                self._end_tree(gentle=True)

    # -- the process tree --------------------------------------------------------------------------
    def _scan(self, now: float) -> None:
        complete = self.local_ranks and len(self.rank_pids) >= self.local_ranks
        if complete and now - self._scanned_at < RESCAN_S:
            return
        self._scanned_at = now
        for pid, role, rank in run_processes(os.getpid()):
            self.seen.setdefault(pid, role)
            if role == "rank" and rank is not None and rank not in self.rank_pids:
                self.rank_pids[rank] = pid
                self.deathwatch.watch(pid)

    def _watch_ranks(self) -> None:
        for rank, pid in self.rank_pids.items():
            if rank in self.deaths:
                continue
            state, status = proc_state(pid)
            if state == "alive":
                continue
            if status is None and pid in self._orphan_status:
                status = self._orphan_status[pid]
            if status is None:  # reaped by the launcher before this poll: the watch thread saw it exit
                status = self.deathwatch.status(pid, wait_s=0.5)
            self.deaths[rank] = {"pid": pid, "at": time.time(), "status": status}
            how = describe_wait_status(status) or "gone"
            self._log(f"rank {rank} (pid {pid}) ended: {how}")
            if status is not None and status != 0:
                self._failure_seen = self._failure_seen or time.monotonic()

    def _reap_orphans(self) -> None:
        """Ranks whose launcher died are our children now (subreaper): wait for them, keep the status."""
        if self.child is None:
            return
        for pid in list(self.seen):
            if pid == self.child.pid:
                continue
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue  # not our child: its launcher waits for it
            if got == pid:
                self._orphan_status[pid] = status

    def _alive(self) -> list[int]:
        return [p for p in self.seen if p != os.getpid() and proc_state(p)[0] == "alive"]

    def _end_tree(self, gentle: bool) -> None:
        """SIGTERM (when ``gentle``), a short wait, then SIGKILL to every process of the run."""
        self._scan(float("inf"))
        targets = [p for p in self._alive()]
        if self.child is not None and self.child.poll() is None and self.child.pid not in targets:
            targets.append(self.child.pid)
        if gentle:
            for pid in targets:
                _kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + TERM_WAIT_S
            while time.monotonic() < deadline and any(proc_state(p)[0] == "alive" for p in targets):
                self._reap_orphans()
                time.sleep(POLL_S)
        for pid in targets:
            if proc_state(pid)[0] == "alive":
                _kill(pid, signal.SIGKILL)

    def _check_lingering(self, now: float) -> None:
        if now - self._records_at < 1.0:
            return
        self._records_at = now
        records = read_records(self.paths.root)
        if self._rank0_end_seen is None and records.get(0, {}).get("state"):
            self._rank0_end_seen = now
        if any(r.get("state") == "failed" for r in records.values()):
            self._failure_seen = self._failure_seen or now
        if self._rank0_end_seen is not None and now - self._rank0_end_seen > LINGER_S and self._alive():
            left = sorted(r for r, p in self.rank_pids.items() if proc_state(p)[0] == "alive")
            self.notes.append(f"rank(s) {', '.join(map(str, left)) or '?'} had not exited {LINGER_S:.0f} s after "
                              "rank 0 ended and were ended")
            self._end_tree(gentle=True)
            self._rank0_end_seen = float("inf")
        elif self._failure_seen is not None and now - self._failure_seen > FAILURE_GRACE_S and self._alive():
            self.notes.append(f"processes still running {FAILURE_GRACE_S:.0f} s after the failure were ended")
            self._end_tree(gentle=False)
            self._failure_seen = float("inf")

    # -- main --------------------------------------------------------------------------------------
    def run(self) -> int:
        self._install_signals()
        set_subreaper()
        if self.child is None:  # a spare's worker is already running: its supervisor cleared them before
            clear_records(self.paths.root)
        env = dict(os.environ, **{SUPERVISOR_ENV: str(os.getpid())})
        self.notifier = self._notifier()
        if self.child is None:
            self._log(f"pid {os.getpid()} starts: {' '.join(self.argv)}")
            try:
                self.child = subprocess.Popen(self.argv, env=env)
            except OSError as err:
                return self._conclude(launch_error=f"cannot start the DeepSpeed launcher: {err.strerror or err}")
        if self.direct:
            self.seen[self.child.pid] = "rank"
            self.rank_pids[0] = self.child.pid
            self.deathwatch.watch(self.child.pid)
        else:
            self.seen[self.child.pid] = "launcher"
        while True:
            now = time.monotonic()
            self._act_on_signals()
            self._scan(now)
            self._reap_orphans()
            self._watch_ranks()
            self._check_lingering(now)
            if self.child.poll() is not None and not self._alive():
                break
            time.sleep(POLL_S)
        self._scan(float("inf"))
        self._watch_ranks()
        self.deathwatch.close()
        return self._conclude()

    def _conclude(self, launch_error: str = "") -> int:
        records = read_records(self.paths.root)
        rc = self.child.returncode if self.child is not None else None
        plan = self._plan()
        abort_cause = self._swap_disk_cause(plan) if self.deaths and plan is not None else ""
        state, reason, culprit = decide(records, self.deaths, rc, self.forced, launch_error, single=self.direct,
                                        abort_cause=abort_cause)
        notes = self.notes + (last_alert_note(self.paths.events) if "without reporting why" in reason else [])
        reason = f"{reason}; {'; '.join(notes)}" if notes else reason
        pids = sorted({os.getpid(), *self.seen})
        from zerotui.core.hardware.gpu_release import wait_gpu_release

        gpu = wait_gpu_release([p for p in pids if p != os.getpid()])
        self._remove_swap(plan)
        r0 = records.get(0, {})
        progress = run_progress(self.paths)
        step = r0.get("step")
        if not isinstance(step, int):  # rank 0 said nothing (killed): where its step reports left the run
            step = progress[0]
        world = r0.get("world_size") or len(records) or None
        try:  # a full disk must not end the supervisor in a traceback with the status left "running"
            with EventWriter(self.paths.events) as writer:
                if state == "failed" and culprit is not None and world != 1:
                    writer.emit("alert", kind="rank", message=reason, rank=culprit,
                                hint=f"worker.log has every rank's output; `zerotui resume {self.paths.name}` "
                                     "continues from the last complete checkpoint")
                started = r0.get("started")
                writer.emit("run_finished", state=state, reason=reason, step=step, rank=culprit,
                            world_size=world, pids=pids, gpu_release=gpu,
                            elapsed_s=round(time.time() - started, 1) if isinstance(started, (int, float)) else None)
            # run_finished says where rank 0 ended; status.json shows step, loss and speed of one step
            # report, as `zerotui runs` does (a mid-interval failure's step has no loss of its own).
            write_end_status(self.paths, state, reason, culprit, pids, progress, gpu_release=gpu)
        except OSError as err:
            self._log(f"could not record the end in {self.paths.root} ({err.strerror or err}); run {state}: {reason}")
        self._log(f"run {state}: {reason}")
        self._log(gpu["note"])
        if self.notifier is not None:  # the end (and any alert not yet through) reaches the user's URL
            self.notifier.finish()
        return 0 if state in ("completed", "stopped") else 1

    def _plan(self) -> Optional[Plan]:
        try:
            return load_plan(self.paths.plan)
        except (ZeroTuiError, OSError):
            return None  # a plan that no longer reads named no swap folder this supervisor could trust

    def _swap_disk_cause(self, plan: Plan) -> str:
        """What NVMe offload had to do with a rank's death: DeepSpeed's mlock() refused by the locked-memory
        limit (memlock.mlock_failure), or a full swap disk (nvme_swap.full_disk_cause, read before the swap
        folder is removed); '' where the plan swaps to no disk or neither is seen."""
        if not plan.uses_nvme():
            return ""
        try:
            estimate = read_json_file(self.paths.estimate)
        except (OSError, ValueError):
            estimate = None

        def figure(key: str) -> Optional[int]:
            value = estimate.get(key) if isinstance(estimate, dict) else None
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        return (mlock_failure(self.paths.log, figure("locked_bytes"))
                or full_disk_cause(plan.nvme_path, self.paths.root, self.paths.log, figure("nvme_bytes")) or "")

    def _remove_swap(self, plan: Optional[Plan]) -> None:
        """Every process of the run is gone: its NVMe swap files go too (core/deepspeed/nvme_swap.py)."""
        if plan is not None and plan.uses_nvme():
            said = remove_swap(plan.nvme_path, self.paths.root)
            if said:
                self._log(said)

    def _notifier(self) -> Optional[Notifier]:
        """The plan's notification URL, followed on a thread of this process (core/run/notify.py)."""
        try:
            notifier = notifier_for(self.paths, load_plan(self.paths.plan), self._log)
        except (ZeroTuiError, OSError) as err:
            self._log(f"notifications off: the run's plan.yaml could not be read ({err})")
            return None
        if notifier is not None:
            notifier.start()
        return notifier

    def _log(self, message: str) -> None:
        sys.stderr.write(f"zerotui supervisor: {message}\n")
        sys.stderr.flush()


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        sys.stderr.write("usage: python -m zerotui.core.run.supervisor RUN_DIR [--local-ranks N | --direct] "
                         "-- COMMAND...\n")
        return 2
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m zerotui.core.run.supervisor")
    parser.add_argument("run_dir", type=Path, nargs="?")
    parser.add_argument("--local-ranks", type=int, default=0, help="ranks the launcher starts on this node")
    parser.add_argument("--direct", action="store_true", help="COMMAND is the worker itself (one process)")
    parser.add_argument("--spare", type=Path, help="start COMMAND, a spare worker, and wait for a run (core/run/spare.py)")
    args = parser.parse_args(argv[:cut])
    command = argv[cut + 1:]
    if not command:
        sys.stderr.write("zerotui supervisor: no command after --\n")
        return 2
    if args.spare is not None:
        from zerotui.core.run.spare_wait import serve_spare

        set_subreaper()
        return serve_spare(args.spare.resolve(), command, lambda paths, argv, child, signals: Supervisor(
            paths, argv, direct=True, child=child, signals=signals).run())
    if args.run_dir is None:
        parser.error("the run folder is required")
    return Supervisor(RunPaths(args.run_dir.resolve()), command, args.local_ranks, direct=args.direct).run()


if __name__ == "__main__":
    sys.exit(main())
