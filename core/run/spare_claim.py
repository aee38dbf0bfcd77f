"""A launch handing its run to a spare (core/run/spare.py has the whole story): which plans a spare may
serve, and the claim itself — under the spare's lock, one JSON line into its FIFO, then its answer
(``ack.json``). A spare that refuses or stays silent is ended, whole session, before the launch starts
cold, so that two workers can never start on one run folder."""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Callable, Mapping, Optional

from zerotui.core.run.folder import pid_alive
from zerotui.core.run.spare import (ACK, ACK_S, CLAIM_BYTES, FIFO, Spare, cmdline, enabled, env_key, list_spares,
                                    try_lock)
from zerotui.core.safe_read import load_json, read_text


def claimable(env: Mapping[str, str], several_processes: bool) -> bool:
    """Whether a launch from ``env`` may use a spare at all (see the module docstring). A spare runs with
    the allocator setting of its environment, the user's or else zerotui's, which is what a cold start
    of any plan would get (core/plan/allocator.py)."""
    return not several_processes and enabled(env)


def claim(run_root: Path, env: Mapping[str, str], resume: bool, launched: float,
          note: Callable[[str], None] = lambda _line: None) -> Optional[int]:
    """Hand the run in ``run_root`` to a live spare with this environment; the pid of its supervisor (now
    the run's), or None when no spare took it (then nothing of any spare touched the run). ``note`` hears
    why a spare that was asked did not take it (the launch writes that into worker.log)."""
    key = env_key(env)
    for spare in list_spares():
        if spare.key != key:
            continue
        fd = try_lock(spare.folder)
        if fd is None:
            continue  # another launch is talking to it
        try:
            pid = _claim_locked(spare, run_root, key, resume, launched, note)
        finally:
            os.close(fd)
        if pid is not None:
            return pid
    return None


def _claim_locked(spare: Spare, run_root: Path, key: str, resume: bool, launched: float,
                  note: Callable[[str], None]) -> Optional[int]:
    message = json.dumps({"run": str(run_root), "resume": resume, "cwd": os.getcwd(), "key": key,
                          "launched": launched}).encode() + b"\n"
    if len(message) > CLAIM_BYTES:
        return None  # a path this long cannot be sent whole: start cold
    try:
        fd = os.open(spare.folder / FIFO, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        if err.errno in (errno.ENXIO, errno.ENOENT):  # nobody reads it: the spare is gone or taken
            shutil.rmtree(spare.folder, ignore_errors=True)
        return None
    try:
        os.write(fd, message)
    except OSError:
        return None
    finally:
        os.close(fd)
    answer = _wait_ack(spare)
    if answer is not None and answer.get("ok") is True and answer.get("run") == str(run_root):
        shutil.rmtree(spare.folder, ignore_errors=True)
        return spare.supervisor
    # Refused, or silent: end it, so that it can never start on this run beside the cold start.
    why = (answer or {}).get("why") or f"no answer within {ACK_S:.0f} s"
    note(f"zerotui: the spare worker (supervisor pid {spare.supervisor}) did not take the run: {why}; "
         "starting it afresh")
    end_spare(spare)
    shutil.rmtree(spare.folder, ignore_errors=True)
    return None


def _wait_ack(spare: Spare) -> Optional[dict]:
    deadline = time.monotonic() + ACK_S
    while time.monotonic() < deadline:
        try:
            return load_json(read_text(spare.folder / ACK, 64 << 10, follow=False))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not pid_alive(spare.supervisor):
            return None
        time.sleep(0.01)
    return None


def end_spare(spare: Spare) -> None:
    """SIGKILL the spare's whole session (it was started with its own), and wait until it is gone."""
    if str(spare.folder) not in cmdline(spare.supervisor):
        return  # already gone; its pid may belong to someone else by now
    try:
        os.killpg(spare.supervisor, signal.SIGKILL)
    except OSError:
        return
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and pid_alive(spare.supervisor) and str(spare.folder) in cmdline(spare.supervisor):
        time.sleep(0.02)


