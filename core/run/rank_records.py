"""One small file per rank of a multi-process run: who it is, what it saw, and how it ended.

``RUN/ranks/rank-<N>.json`` is written by rank N itself (atomically), when it starts and when it ends.
Only rank 0 writes events and the heartbeat; these files are how the supervisor
(``core/run/supervisor.py``) learns, after the fact, which rank failed first and why — including a rank that
could not say anything because it was killed (its file then has a start but no end).

A record holds:
- ``rank``, ``local_rank``, ``world_size``, ``pid``, ``host``, ``started``;
- ``env``: the launcher-related variables exactly as this process saw them (NVLink multicast switches,
  the collective timeout, the devices it may use), so a test or a user can check what each rank got;
- at the end: ``state`` (completed | stopped | failed), ``reason``, ``cause`` (``error``: this rank's own
  failure; ``peer``: a collective failed because another rank went away; ``timeout``: a collective timed
  out), ``step``, ``ended``.
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any, Optional

from zerotui.core.run.run_files import read_json_file
from zerotui.core.atomic import atomic_write_json

RANKS_DIR = "ranks"

#: The variables each rank reports in its record and its first worker.log line.
ENV_SHOWN = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "DEEPSPEED_TIMEOUT",
             "CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_SIZE",
             "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")

#: Set by the supervisor in the environment it gives the launcher: every rank inherits it.
SUPERVISOR_ENV = "ZEROTUI_SUPERVISOR_PID"


def ranks_dir(run_root: Path) -> Path:
    return Path(run_root) / RANKS_DIR


def record_path(run_root: Path, rank: int) -> Path:
    return ranks_dir(run_root) / f"rank-{rank}.json"


def supervisor_pid(env: Optional[dict] = None) -> Optional[int]:
    raw = (os.environ if env is None else env).get(SUPERVISOR_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def env_line(rank: int, env: Optional[dict] = None) -> str:
    env = os.environ if env is None else env
    shown = " ".join(f"{k}={env[k]}" for k in ENV_SHOWN if k in env)
    return f"zerotui worker rank {rank} (pid {os.getpid()}, host {socket.gethostname()}): {shown}"


def record_start(run_root: Path, rank: int) -> dict[str, Any]:
    env = os.environ
    rec = {"rank": rank, "local_rank": _int(env.get("LOCAL_RANK"), rank),
           "world_size": _int(env.get("WORLD_SIZE"), 1), "pid": os.getpid(), "host": socket.gethostname(),
           "started": time.time(), "env": {k: env[k] for k in ENV_SHOWN if k in env}}
    folder = ranks_dir(run_root)
    folder.mkdir(exist_ok=True)
    atomic_write_json(record_path(run_root, rank), rec, fsync=False)
    return rec


def record_end(run_root: Path, rank: int, start: dict[str, Any], state: str, reason: str, cause: str = "",
               step: Optional[int] = None, at: Optional[float] = None) -> None:
    """Add how this rank ended to its record. ``at``: when it failed (the exception), not when it exits."""
    rec = {**start, "state": state, "reason": reason, "cause": cause, "step": step,
           "ended": time.time() if at is None else at}
    atomic_write_json(record_path(run_root, rank), rec, fsync=False)


def read_records(run_root: Path) -> dict[int, dict[str, Any]]:
    """Every rank's record, by rank; unreadable files are skipped (a rank killed mid-write leaves none,
    the write being atomic)."""
    out: dict[int, dict[str, Any]] = {}
    folder = ranks_dir(run_root)
    if not folder.is_dir():
        return out
    for f in folder.glob("rank-*.json"):
        try:
            rec = read_json_file(f)  # a regular file of this run's, bounded: never a FIFO that blocks
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and isinstance(rec.get("rank"), int):
            out[rec["rank"]] = rec
    return out


def clear_records(run_root: Path) -> None:
    """A resumed run starts new ranks: the previous attempt's records must not be read as theirs."""
    folder = ranks_dir(run_root)
    if folder.is_dir():
        for f in folder.glob("rank-*.json"):
            try:
                f.unlink()
            except OSError:
                pass


# -- why a rank's collective failed ----------------------------------------------------------------

_TIMEOUT_WORDS = ("timed out", "timeout", "Timed out")
# gloo, NCCL and torch's store say a peer went away in these words (torch 2.x, gloo tcp/pair.cc).
_PEER_WORDS = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "Connection refused",
               "remote process exited", "NCCL communicator was aborted", "peer closed", "failed to recv",
               "failed to send", "Socket closed")
_DIST_TYPES = ("DistBackendError", "DistNetworkError", "DistStoreError", "DistError")


def failure_cause(exc: BaseException) -> str:
    """'timeout', 'peer' or 'error' for an exception that ended a rank's training loop.

    A rank whose collective failed because another rank died is a consequence, not the cause: the
    supervisor looks for a rank that failed on its own ('error') or died without a word first."""
    seen = 0
    e: Optional[BaseException] = exc
    while e is not None and seen < 5:
        text = str(e)
        if any(w in text for w in _TIMEOUT_WORDS) and (type(e).__name__ in _DIST_TYPES or "gloo" in text
                                                       or "NCCL" in text or "collective" in text.lower()
                                                       or "recv" in text or "send" in text):
            return "timeout"
        if any(w in text for w in _PEER_WORDS):
            return "peer"
        if type(e).__name__ in _DIST_TYPES:
            return "peer"
        e = e.__cause__ or e.__context__
        seen += 1
    return "error"


# -- how a process ended, seen from outside --------------------------------------------------------

def proc_state(pid: int) -> tuple[str, Optional[int]]:
    """('alive' | 'zombie' | 'gone', wait status or None) from /proc/<pid>/stat.

    A rank is its launcher's child, so only the launcher can wait() for it; but until the launcher reaps
    it (it polls every second, deepspeed/launcher/launch.py) an exited rank is a zombie whose stat line
    still carries its wait status (field 52, ``exit_code``, Linux >= 3.5, proc(5))."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return "gone", None
    if fields[0] in ("Z", "X"):
        try:
            return "zombie", int(fields[49])
        except (IndexError, ValueError):
            return "zombie", None
    return "alive", None


def describe_wait_status(status: Optional[int]) -> str:
    """'killed by SIGKILL', 'exited with code 1', or '' when unknown."""
    if status is None:
        return ""
    import signal

    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)}"
    return ""


def _int(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default
