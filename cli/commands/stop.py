"""`zerotui stop [RUN] [--now] [--wait] [--json]`: ask a run's worker to stop, and print its acknowledgement
(with --json: one object with the acknowledgement, the events seen while waiting and the run's end)."""
from __future__ import annotations

import argparse
import json
import os
import time

from zerotui.cli.arg_types import folder
from zerotui.core.errors import RunError
from zerotui.core.timefmt import format_ago

ACK_TIMEOUT_S = 20.0  # the worker polls control.jsonl every 0.25 s, from its first second on
EXIT_TIMEOUT_S = 60.0  # after run_finished the worker only destroys its process group and exits


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", metavar="RUN",
                        help="run folder, name, or a unique part of it (default: the newest live run)")
    parser.add_argument("--now", action="store_true",
                        help="stop at the next step without saving a checkpoint")
    parser.add_argument("--wait", action="store_true", help="wait until the run has ended")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR", help="where the runs are (default: the user data folder)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object {run, command, ack, events, finished, exit, exit_code} at the end")


def run(args: argparse.Namespace) -> int:
    from zerotui.cli.run_choice import say_choice
    from zerotui.cli.run_follow import EventCursor, finished_exit_code, format_event
    from zerotui.core.events.stream import whole_lines_end
    from zerotui.core.run.folder import (read_status, require_intact, require_not_silent, resolve_run,
                                         run_state, send_control)

    paths = resolve_run(args.run, args.runs_dir, prefer_live=True, note=say_choice("stop"))
    require_intact(paths, "stop")
    state = run_state(paths)
    if not args.run and state in ("completed", "stopped", "failed", "lost"):
        raise RunError(f"no live run to stop; the newest, {paths.name}, is {state}",
                       "`zerotui runs` lists the runs")
    if state in ("completed", "stopped", "failed"):
        raise RunError(f"run {paths.name} has already {'ended: ' + state if state != 'failed' else 'failed'}",
                       "`zerotui runs` lists the runs; `zerotui resume RUN` continues a stopped one")
    if state == "lost":
        st = read_status(paths)
        require_not_silent(paths, st)
        beat = format_ago(st.get("heartbeat"))
        raise RunError(f"run {paths.name} is lost: its worker is gone (last heartbeat {beat})",
                       f"nothing to stop; `zerotui resume {paths.name}` continues it from its last checkpoint")
    cursor = EventCursor(paths, whole_lines_end(paths.events))  # not inside a torn line (resume.py says why)
    command = "stop-now" if args.now else "stop"
    entry = send_control(paths, command, by=f"zerotui stop (pid {os.getpid()})")
    # --json: the same steps, said once at the end as one object; the text lines as they happen otherwise.
    result: dict = {"run": paths.name, "path": str(paths.root), "command": command, "id": entry["id"],
                    "ack": None, "events": [], "finished": None, "exit": None}

    def say(line: str) -> None:
        if not args.json:
            print(line, flush=True)

    def done(code: int) -> int:
        if args.json:
            print(json.dumps({**result, "exit_code": code}, indent=1, default=str))
        return code

    ack = cursor.wait_for(lambda e: (e.get("type") == "control_ack" and e.get("id") == entry["id"])
                          or e.get("type") == "run_finished", ACK_TIMEOUT_S)
    if ack is None:
        say(f"sent {command} to {paths.name}; no acknowledgement within {ACK_TIMEOUT_S:.0f} s "
            f"(the worker reads it when it next looks; see {paths.log})")
        return done(1)
    if ack.get("type") == "lost":
        return done(finished_exit_code(paths, ack))
    result["ack"] = ack
    say(f"{paths.name}: {format_event(ack)}")
    if ack.get("type") == "run_finished":
        result["finished"] = ack
        return done(finished_exit_code(paths, ack))
    if not ack.get("ok"):
        return done(1)
    if not args.wait:
        return done(0)

    def show(ev: dict) -> None:
        if ev.get("type") in ("checkpoint", "alert"):
            result["events"].append(ev)
            say(f"{paths.name}: {format_event(ev)}")

    end = cursor.wait_for(lambda e: e.get("type") == "run_finished", None, show)
    assert end is not None
    if end.get("type") == "run_finished":
        result["finished"] = end
        say(f"{paths.name}: {format_event(end)}")
        result["exit"] = _confirm_exit(paths, say)
    return done(finished_exit_code(paths, end))


def _confirm_exit(paths, say, timeout: float = EXIT_TIMEOUT_S) -> dict:
    """The run has ended; say so again only once its processes are gone (and their memory with them)."""
    from zerotui.core.run.folder import pid_alive, read_status

    st = read_status(paths)
    pids = [p for p in (st.get("pids") or [st.get("pid")]) if p]
    deadline = time.monotonic() + timeout
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [p for p in pids if pid_alive(p)]
    info: dict = {"pids": pids, "alive": alive, "gpu": None}
    if alive:
        say(f"{paths.name}: process(es) {', '.join(map(str, alive))} still running {timeout:.0f} s after the end "
            f"(see {paths.log})")
    elif pids:
        say(f"{paths.name}: worker process(es) {', '.join(map(str, pids))} exited")
        # A stop must free every GPU of the run: NVML must list none of its pids. Without NVML (a CPU
        # machine) there is nothing to say here; the run's end in status.json notes the check was skipped.
        from zerotui.core.hardware.gpu_release import wait_gpu_release

        gpu = wait_gpu_release(pids)
        info["gpu"] = gpu
        if gpu["checked"] or gpu["held"]:
            say(f"{paths.name}: {gpu['note']}")
    return info
