"""A spare's supervisor until its run comes (core/run/spare.py has the whole story).

``serve_spare`` starts the worker with a pipe on its stdin, records the spare (``spare.json``) and waits
on the ``claim`` FIFO. A claim is checked — this spare's environment, code unchanged since it started,
a run folder that a launch has just marked "starting" at the claimed time — and acknowledged; then the
claim goes down the pipe to the worker, this process's output moves to the run's worker.log, and it
supervises the run like any other (``Supervisor.run`` with the child already started). A spare ends,
removing its folder, when nobody claimed it within ``ZEROTUI_SPARE_IDLE_S``, when it is sent SIGTERM or
SIGINT, when its worker dies, or after refusing a claim.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.run import spare as sp
from zerotui.core.run.folder import RunPaths, read_status
from zerotui.core.run.rank_records import SUPERVISOR_ENV, clear_records
from zerotui.core.run.run_files import open_append
from zerotui.core.safe_read import load_json

POLL_S = 0.2
#: What ``wait_for_claim`` returns for a claim it refused (the spare ends, its answer left to be read).
REFUSED: dict = {}


class _Signals:
    def __init__(self) -> None:
        self.count = 0
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _on(self, _signum: int, _frame: Any) -> None:
        self.count += 1


def serve_spare(folder: Path, argv: list[str], supervise: Callable[..., int]) -> int:
    """Run as a spare in ``folder``; ``supervise(paths, argv, child, signals)`` once claimed."""
    signals = _Signals()
    started = time.monotonic()
    env = dict(os.environ, **{SUPERVISOR_ENV: str(os.getpid())})
    try:
        child = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE)
    except OSError as err:
        _log(f"cannot start the spare worker: {err.strerror or err}")
        shutil.rmtree(folder, ignore_errors=True)
        return 1
    key = sp.env_key(os.environ)
    try:
        fds = _open_fifo(folder)
    except OSError as err:  # the folder was removed or tampered with under us
        _log(f"cannot open the spare's claim FIFO in {folder}: {err.strerror or err}")
        _end_unclaimed(folder, child, signals, started, remove=True)
        return 1
    # Listed only from here on, with the FIFO open: a launch that finds spare.json can talk to it at once
    # (a claimer that finds nobody reading takes the spare for gone and removes its folder).
    sp.write_info(folder, child.pid, key)
    _log(f"spare pid {os.getpid()} (worker pid {child.pid}) waits for a run in {folder}")
    claim = wait_for_claim(folder, key, child, lambda: signals.count > 0, sp.idle_seconds(), fds)
    if claim is None or claim is REFUSED:
        _end_unclaimed(folder, child, signals, started, remove=claim is None)
        return 0
    paths = RunPaths(Path(claim["run"]))
    _move_output(paths)
    # The previous attempt's rank records go before the worker hears of the run: it writes its own
    # record at once, and clearing after that (as a cold supervisor does) would delete it.
    clear_records(paths.root)
    _log(f"spare pid {os.getpid()}, waiting {time.monotonic() - started:.0f} s, takes run {paths.root}")
    try:
        assert child.stdin is not None
        child.stdin.write(sp.claim_line(claim))
        child.stdin.close()
    except OSError:
        pass  # the worker died meanwhile: supervising it records how
    return supervise(paths, argv, child, signals.count)


def _open_fifo(folder: Path) -> tuple[int, int]:
    fifo = folder / sp.FIFO
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    # Our own writer keeps the FIFO open, so select() waits for data rather than seeing end-of-file each
    # time a claimer closes its end; once both are closed, a claimer's open() fails: nobody reads.
    wfd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    return rfd, wfd


def wait_for_claim(folder: Path, key: str, child: subprocess.Popen, stopped: Callable[[], bool],
                   idle_s: float, fds: Optional[tuple[int, int]] = None) -> Optional[dict]:
    """The first claim, checked and acknowledged; ``REFUSED`` for one it answered no to, None when the
    spare should end for another reason (idle, a signal, its worker gone). ``fds``: the FIFO, opened."""
    rfd, wfd = fds or _open_fifo(folder)
    deadline = time.monotonic() + idle_s
    buf = b""
    try:
        while not stopped() and child.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([rfd], [], [], POLL_S)
            if not ready:
                continue
            buf += os.read(rfd, sp.CLAIM_BYTES)
            if b"\n" not in buf:
                if len(buf) > sp.CLAIM_BYTES:
                    buf = b""  # not a claim of ours: never let it grow
                continue
            line = buf.split(b"\n", 1)[0]
            claim, why = check_claim(line, key, folder)
            run = claim.get("run") if isinstance(claim, dict) else None
            sp.write_ack(folder, why == "", str(run or ""), why)
            # From the answer on, this is no longer a spare to anyone listing them; the folder (with
            # the answer) is the claimer's to remove.
            _unlink(folder / (sp.FIFO if why else sp.INFO))
            if why:
                _log(f"claim refused: {why}")
                return REFUSED
            return claim
        return None
    finally:
        os.close(rfd)
        os.close(wfd)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def check_claim(line: bytes, key: str, folder: Path) -> tuple[Any, str]:
    """(the claim, "") when this spare may take it, else (what was read, why not)."""
    try:
        claim = load_json(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None, "not a claim (unreadable JSON)"
    if not isinstance(claim, dict) or not isinstance(claim.get("run"), str) \
            or not isinstance(claim.get("resume"), bool) or not isinstance(claim.get("launched"), (int, float)):
        return claim, "not a claim (fields missing)"
    if claim.get("key") != key:
        return claim, "another environment"
    if sp.stored_fingerprint(folder) != sp.code_fingerprint():
        return claim, "zerotui or one of its libraries changed since this spare started"
    paths = RunPaths(Path(claim["run"]))
    if not paths.root.is_absolute() or not os.path.isfile(paths.plan):
        return claim, f"{claim['run']} is not a run folder"
    status = read_status(paths)
    if status.get("state") != "starting" or status.get("launched") != claim["launched"]:
        return claim, f"run {paths.name} is not being launched now"
    return claim, ""


def _move_output(paths: RunPaths) -> None:
    """From now on this process writes to the run's worker.log, as a supervisor started cold does."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        fd = open_append(paths.log)
    except OSError as err:
        _log(f"cannot open {paths.log} ({err}); the output stays in the spare's log")
        return
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _end_unclaimed(folder: Path, child: subprocess.Popen, signals: _Signals, started: float,
                   remove: bool) -> None:
    why = ("it refused a claim" if not remove else
           "stopped by a signal" if signals.count else
           "its worker ended" if child.poll() is not None else
           f"nobody claimed it in {time.monotonic() - started:.0f} s")
    if child.poll() is not None and child.returncode:
        _keep_log(folder)
    _log(f"spare pid {os.getpid()} ends: {why}")
    try:
        if child.stdin is not None:
            child.stdin.close()  # end-of-file: the worker exits by itself
        child.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        child.kill()
        child.wait()
    if remove:  # else the claimer reads why in ack.json and removes the folder
        shutil.rmtree(folder, ignore_errors=True)


def _keep_log(folder: Path) -> None:
    """A worker that failed to start as a spare: its output is worth keeping (`zerotui spare` shows it)."""
    try:
        shutil.copyfile(folder / sp.LOG, folder.parent / sp.FAILED_LOG)
    except OSError:
        pass


def _log(message: str) -> None:
    sys.stderr.write(f"zerotui supervisor: {message}\n")
    sys.stderr.flush()
