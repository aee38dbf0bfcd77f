"""--json where a command's result used to be text only: `train`/`resume --foreground` (the run's end),
`doctor --build-ops`, `export`, `sweep` start, resume and stop, `serve`'s address; and the audit that
every command printing a result takes --json. stdout is one JSON document each time (json.loads of all
of it); the lines for people go to stderr."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from cli_capture import run
from run_events import events, wait_until
from sweep_fixture import TRIALS, make_sweep
from test_cli_runs import fake_finished_run
from worker_runs import kill_run, make_run, start_worker, step_reached
from zerotui.cli.main import COMMANDS, _subparser, build_parser

#: Commands that print no result a script would parse, and why.
NO_RESULT = {"completion": "prints a shell script, which is its whole output"}


def test_every_command_that_prints_a_result_takes_json():
    parser = build_parser(only=None)
    lacking = [name for name in COMMANDS if name not in NO_RESULT
               and "--json" not in {s for a in _subparser(parser, name)._actions for s in a.option_strings}]
    assert lacking == []


def test_foreground_json_of_a_killed_run_says_lost_at_its_last_step(capsys, tmp_path):
    """The worker is SIGKILLed while `train --foreground --json` follows it: exit 1, and the document
    names the state, the last step and loss seen, and the way on; the live lines went to stderr."""
    from zerotui.cli.foreground_json import follow_as_json

    paths = make_run(tmp_path, max_steps=1000)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 2), what="step 2")
    threading.Timer(0.5, kill_run, (proc,)).start()
    code = follow_as_json(paths, 0, resumed=False)
    out, err = capsys.readouterr()
    doc = json.loads(out)
    last = events(paths, "step")[-1]
    assert code == 1 == doc["exit_code"] and doc["state"] == "lost" and doc["run"] == paths.name
    assert doc["step"] == last["step"] >= 2 and doc["loss"] == last["loss"] and doc["total_steps"] == 1000
    assert f"zerotui resume {paths.name}" in doc["error"] and doc["error"] in err
    assert any(line.startswith("step 2/1000") for line in err.splitlines())


def _only_python_on_path(folder):
    """A PATH with the interpreter and no compiler: every op build fails, as on a machine without one."""
    folder.mkdir()
    (folder / "python").symlink_to(sys.executable)
    return str(folder)


def test_doctor_build_ops_json_lists_each_op_and_fails_without_a_compiler(tmp_path):
    """An extension cache holding cpu_adam's library, and no compiler: cpu_adam is "built already",
    every other op fails (exit 1), each with its reason; the compiler's words go to stderr."""
    ext = tmp_path / "ext"
    (ext / "cpu_adam").mkdir(parents=True)
    (ext / "cpu_adam" / "cpu_adam.so").write_bytes(b"")  # what prebuild.is_built looks for
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(ext), PATH=_only_python_on_path(tmp_path / "bin"))
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "doctor", "--build-ops", "--json"], env=env,
                       check=False, capture_output=True, text=True, timeout=600)
    doc = json.loads(r.stdout)  # DeepSpeed's notices went to stderr
    ops = {op["name"]: op for op in doc["ops"]}
    assert r.returncode == 1 == doc["exit_code"] and doc["ok"] is False, r.stderr[-2000:]
    assert len(ops) == len(doc["ops"]) and {"cpu_adam", "fused_adam"} <= set(ops)
    assert ops.pop("cpu_adam") == {"name": "cpu_adam", "state": "built already", "seconds": None}
    assert all(op["state"] == "failed" and op["error"] for op in ops.values())
    assert "cpu_adam: already built" in r.stderr and all(f"{n}: could not be built" in r.stderr for n in ops)


def test_export_json_names_the_files_it_wrote(capsys, tmp_path):
    out = tmp_path / "demo"
    code, text, err = run(capsys, "export", "tiny-cpu-demo", "-o", str(out), "--json")
    doc = json.loads(text)
    assert code == 0, err
    assert doc["out"] == str(out) and sorted(doc["files"]) == sorted(p.name for p in out.iterdir())
    written = json.loads((out / "ds_config.json").read_text())
    assert doc["train_batch"] == written["train_batch_size"] and doc["launch"] == str(out / "launch.sh")
    code, text, err = run(capsys, "export", "tiny-cpu-demo", "-o", str(out), "--json")  # exists: refused
    assert code == 2 and json.loads(text)["exit_code"] == 2 and "--force" in json.loads(text)["error"]


def test_sweep_resume_and_stop_json(capsys, tmp_path, user_presets):
    """A sweep whose trials are all told: resumed, its driver starts, finds nothing left and saves the
    best plan; --stop --json on a sweep not running is an error document."""
    from zerotui.core.sweep.folder import read_spec, write_spec, write_status

    runs = tmp_path / "runs"
    paths = make_sweep(runs / "sweeps" / "20261201-120000-demo", runs)
    write_spec(paths, {**read_spec(paths), "trials": len(TRIALS)})
    write_status(paths, state="stopped", trials_done=len(TRIALS), pid=None)  # its driver has exited
    code, out, err = run(capsys, "sweep", "--resume", paths.name, "--json", "--runs-dir", str(runs))
    doc = json.loads(out)
    assert code == 0, err
    assert (doc["sweep"], doc["path"], doc["resumed"], doc["trials"], doc["parallel"]) == \
        (paths.name, str(paths.root), True, len(TRIALS), 1)
    assert doc["space"] == ["lr in [0.0001, 0.001] (log)", "grad_accum in {1, 2, 4}"]
    from zerotui.core.sweep.folder import driver_alive, read_status

    wait_until(lambda: read_status(paths).get("pid") == doc["pid"] and not driver_alive(paths), 120,
               "the driver's end")
    assert read_status(paths)["state"] == "completed" and list(user_presets.iterdir())  # the best plan, saved
    code, out, err = run(capsys, "sweep", "--stop", paths.name, "--json", "--runs-dir", str(runs))
    assert code == 2 and "is not running" in json.loads(out)["error"] and len(err.splitlines()) == 1


def test_sweep_start_and_stop_json(capsys, tmp_path, user_presets):
    runs = tmp_path / "runs"
    code, out, err = run(capsys, "sweep", "tiny-cpu-demo", "--trials", "2", "--space", "lr=1e-4..1e-3:log",
                         "--max-steps", "1", "--runs-dir", str(runs), "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert (doc["resumed"], doc["trials"], doc["parallel"], doc["space"]) == (False, 2, 1, ["lr in [0.0001, 0.001] (log)"])
    from zerotui.core.sweep.folder import driver_alive, find_sweep, read_status

    paths = find_sweep(runs, doc["sweep"])
    wait_until(lambda: driver_alive(paths), 60, "the driver's start")
    code, out, err = run(capsys, "sweep", "--stop", doc["sweep"], "--json", "--runs-dir", str(runs))
    stop = json.loads(out)
    assert code == 0, err
    assert (stop["sweep"], stop["pid"], stop["stopping"]) == (doc["sweep"], doc["pid"], True)
    wait_until(lambda: not driver_alive(paths), 300, "the stopped driver's end")
    assert read_status(paths)["state"] == "stopped"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_json_is_one_line_with_the_address_and_nothing_more(tmp_path):
    paths = fake_finished_run(tmp_path / "runs", "r1", "completed")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "zerotui.cli.main", "serve", str(paths.root), "--port", str(port),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        doc = json.loads(proc.stdout.readline())
        assert (doc["run"], doc["read_only"], doc["url"]) == (paths.name, True, f"http://127.0.0.1:{port}/")
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(doc["url"], timeout=5) as page:
                    assert page.status == 200
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=60)
    assert rest == "", rest  # the server's banner and request log went to stderr
    assert "Serving" in err


@pytest.mark.parametrize("argv", [["stop", "--json", "--bogus"], ["runs", "--json", "--all", "extra"]])
def test_a_usage_error_under_json_is_a_document_too(capsys, argv):
    code, out, err = run(capsys, *argv)
    doc = json.loads(out)
    assert code == 2 == doc["exit_code"] and doc["error"] == err.strip() and "unrecognized arguments" in err
