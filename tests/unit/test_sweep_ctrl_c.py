"""Ctrl-C on a foreground `zerotui sweep`, as a terminal sends it (SIGINT to the whole foreground process
group), with the real CLI, driver and worker on the tiny model: the trial stops with a checkpoint, the
sweep folder says it stopped (not running), and the last line says what happened and how to go on.

Before: the CLI's subprocess.call killed the driver (SIGKILL) a quarter of a second after the SIGINT, so
nothing was printed, the trial went on training unwatched and stayed "running" in the study."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from run_events import wait_until
from zerotui.core.run.folder import RunPaths, live_pids, read_status, run_state
from zerotui.core.sweep.folder import driver_alive, find_sweep
from zerotui.core.sweep.report import summary


def _stepped(runs) -> RunPaths | None:
    for root in runs.glob("*-t0"):
        run = RunPaths(root)
        if run.events.exists() and any(json.loads(ln).get("type") == "step"
                                       for ln in run.events.read_text().splitlines() if ln.endswith("}")):
            return run
    return None


def _as_a_terminal_job() -> None:
    # A shell runs a foreground job with SIGINT at its default; a test runner started in the background
    # may pass it down ignored, and Python then never turns it into KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _end_what_is_left(runs) -> None:
    """A failing test must not leave the driver (in a session of its own) and its trials training."""
    for status in [*runs.glob("sweeps/*/status.json"), *runs.glob("*/status.json")]:
        st = read_status(RunPaths(status.parent))
        for pid in live_pids(st):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_ctrl_c_of_a_foreground_sweep_stops_its_trial_and_says_how_to_go_on(tmp_path):
    runs = tmp_path / "runs"
    env = dict(os.environ, ZEROTUI_PRESETS_DIR=str(tmp_path / "presets"), ZEROTUI_RUNS_DIR=str(runs),
               PYTHONDONTWRITEBYTECODE="1")
    cli = subprocess.Popen([sys.executable, "-m", "zerotui.cli.main", "sweep", "tiny-cpu-demo", "--trials", "3",
                            "--space", "lr=1e-4..1e-3:log", "--max-steps", "5000", "--foreground"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                           start_new_session=True,  # its own group, as a shell gives a foreground job
                           preexec_fn=_as_a_terminal_job)
    try:
        run = wait_until(lambda: _stepped(runs), 240, "the first trial's first step")
        os.killpg(cli.pid, signal.SIGINT)  # Ctrl-C
        out, err = cli.communicate(timeout=240)
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
        _end_what_is_left(runs)
    assert cli.returncode == 130, (out, err)
    assert "Traceback" not in out + err, (out, err)
    paths = find_sweep(runs, None)
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"zerotui sweep: sweep {paths.name} stopped with 0 of 3 trials done; "
                           f"trial 0 (run {run.name}) stopped at step "), out
    assert f"continue with `zerotui sweep --resume {paths.name}`" in last
    # The trial's run stopped with a checkpoint; none of its processes is left.
    assert run_state(run) == "stopped" and (run.root / "checkpoints").is_dir()
    assert any(json.loads(ln).get("type") == "checkpoint" for ln in run.events.read_text().splitlines())
    assert live_pids(read_status(run)) == []
    # The sweep folder: stopped, the trial stopped (not running), the driver gone.
    s = summary(paths)
    assert s["state"] == "stopped" and [t["state"] for t in s["trials"]] == ["stopped"] and s["running"] == 0
    assert not driver_alive(paths)


FAKE_DRIVER = """
import os, pathlib, signal, sys, time
got = pathlib.Path(sys.argv[1])
signal.signal(signal.SIGTERM, lambda s, f: got.open("a").write("TERM\\n"))
got.write_text(f"{os.getpid()}\\n")
while True:
    time.sleep(0.05)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_each_ctrl_c_reaches_the_driver_once_and_a_third_detaches(tmp_path, monkeypatch, capsys, sig):
    """The CLI's part alone, with a driver that never ends: Ctrl-C and Ctrl-C again each reach it as one
    SIGTERM (its first stop is graceful, its second at once); the third leaves it to end by itself. A
    SIGTERM to the CLI (`timeout`, a process-group kill, which reached the driver too before it had a
    session of its own) does the same."""
    import threading
    import time

    from zerotui.cli.commands import sweep as cmd
    from zerotui.core.sweep.folder import SweepPaths

    got = tmp_path / "got"
    monkeypatch.setattr(cmd, "_driver_argv", lambda paths: [sys.executable, "-c", FAKE_DRIVER, str(got)])

    def lines() -> list[str]:
        return got.read_text().splitlines() if got.exists() else []

    def press_ctrl_c() -> None:
        for n in range(3):
            wait_until(lambda: len(lines()) == 1 + n, 30, f"the driver's start and {n} stops")
            time.sleep(0.3)  # past subprocess's own 0.25 s wait after a KeyboardInterrupt
            os.kill(os.getpid(), sig)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    try:
        assert cmd._foreground(SweepPaths(tmp_path / "s"), as_json=False) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
        if lines():
            os.kill(int(lines()[0]), signal.SIGKILL)
    presser.join(5)
    assert lines()[1:] == ["TERM", "TERM"]
    assert "detached; sweep s goes on stopping in the background" in capsys.readouterr().err
