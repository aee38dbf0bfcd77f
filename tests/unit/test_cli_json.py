"""`--json` on every command that prints a result: stdout is exactly one JSON document (json.loads of
the whole of it); an error is the document {"error", "exit_code"} there, with its one line on stderr and
the same exit code as without --json; and `estimate`'s exit code is its verdict (0 fits, 3 does not fit,
2 bad input)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from cli_capture import run
from run_events import wait_until
from sweep_fixture import TRIALS, make_sweep
from test_cli_runs import fake_finished_run
from worker_runs import finish, make_run, start_worker, step_reached


def json_error(out: str, code: int, err: str) -> dict:
    """The error document: one line on stderr (zerotui: ...), the same words and exit code on stdout."""
    doc = json.loads(out)
    assert doc["exit_code"] == code and len(err.splitlines()) == 1 and doc["error"] in err, (out, err)
    return doc


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], check=False, capture_output=True, text=True,
                          timeout=180)


# -- estimate: the exit code says whether the plan fits ------------------------------------------------

BIG = ["--model", "llama-2-7b", "--method", "full", "--stage", "2", "--gpu-mem", "24GiB", "--ram", "64GiB"]
SMALL = ["--model", "llama-2-7b", "--method", "lora", "--gpu-mem", "80GiB", "--ram", "256GiB"]


@pytest.mark.parametrize("plan,fits", [(SMALL, True), (BIG, False)])
def test_estimate_exit_code_is_the_verdict(capsys, plan, fits):
    code, out, err = run(capsys, "estimate", *plan, "--json")
    data = json.loads(out)
    assert data["fits"] is fits and code == (0 if fits else 3), err
    code_text, text, _ = run(capsys, "estimate", *plan)
    assert code_text == code
    assert text.rstrip().endswith("fits this machine" if fits else "`zerotui fit` lists plans that do")


def test_estimate_bad_input_is_still_2_with_json(capsys):
    code, out, err = run(capsys, "estimate", "--model", "llama-2-7b", "--stage", "7", "--json")
    assert code == 2 and "--stage" in json_error(out, 2, err)["error"]  # argparse's own refusal
    code, out, err = run(capsys, "estimate", "--model", "llama-2-7b", "--lora-r", "0", "--method", "lora", "--json")
    assert code == 2 and "field 'lora_r'" in json_error(out, 2, err)["error"]  # the Plan's own refusal


# -- one JSON document per command ----------------------------------------------------------------------

def test_presets_runs_and_attach_listing(capsys, tmp_path):
    code, out, _ = run(capsys, "presets", "--json")
    assert code == 0 and "tiny-cpu-demo" in {p["name"] for p in json.loads(out)}
    runs = tmp_path / "runs"
    code, out, _ = run(capsys, "attach", "--json", "--runs-dir", str(runs))
    assert code == 0 and json.loads(out) == {"default": None, "runs": []}  # empty, like `runs --json`
    old = fake_finished_run(runs, "r1", "completed", step=10)
    new = fake_finished_run(runs, "r2", "stopped", step=4)  # same second: the name orders them
    code, out, _ = run(capsys, "runs", "--json", "--runs-dir", str(runs))
    listed = json.loads(out)
    code, out, _ = run(capsys, "attach", "--json", "--runs-dir", str(runs))
    offer = json.loads(out)
    assert code == 0 and offer["default"] == new.name  # no live run: the newest, as attach opens
    assert [r["name"] for r in offer["runs"]] == [r["name"] for r in listed] == [new.name, old.name]
    code, out, _ = run(capsys, "attach", "r1", "--json", "--runs-dir", str(runs))
    one = json.loads(out)
    assert code == 0 and one["default"] == old.name and [(r["name"], r["step"]) for r in one["runs"]] == [(old.name, 10)]
    code, out, err = run(capsys, "attach", "nosuch", "--json", "--runs-dir", str(runs))
    assert code == 2 and "no run named 'nosuch'" in json_error(out, 2, err)["error"]


def test_import_json_also_with_out_file(capsys, tmp_path):
    cfg = tmp_path / "ds_config.json"
    cfg.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
                               "zero_optimization": {"stage": 3}, "bf16": {"enabled": True},
                               "made_up_key": 1}))
    for extra in ([], ["-o", str(tmp_path / "plan.yaml")]):
        code, out, err = run(capsys, "import", str(cfg), "--json", *extra)
        data = json.loads(out)  # with -o the "wrote ..." line is not printed
        assert code == 0, err
        assert (data["plan"]["micro_batch"], data["plan"]["grad_accum"], data["plan"]["stage"]) == (2, 4, 3)
        assert any("made_up_key" in w for w in data["warnings"])
    assert (tmp_path / "plan.yaml").exists()


def test_sweep_show_json(capsys, tmp_path):
    make_sweep(tmp_path / "runs" / "sweeps" / "20261201-120000-demo", tmp_path / "runs")
    code, out, _ = run(capsys, "sweep", "--show", "--json", "--runs-dir", str(tmp_path / "runs"))
    data = json.loads(out)
    assert code == 0 and len(data["trials"]) == len(TRIALS)
    best = min(evals[max(evals)] for *_, state, evals in TRIALS if state == "COMPLETE")
    assert data["best"]["value"] == pytest.approx(best)


def test_doctor_json_is_the_whole_stdout():
    r = cli("doctor", "--json", "--no-disks")  # with software: torch and DeepSpeed are imported
    data = json.loads(r.stdout)
    assert r.returncode == (0 if data["ok"] else 1), r.stderr
    assert "deepspeed" in data["versions"] or "deepspeed" in data


def test_stop_json_reports_ack_and_end(tmp_path):
    paths = make_run(tmp_path, max_steps=1000)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 2), what="step 2")
    r = cli("stop", paths.name, "--wait", "--json", "--runs-dir", str(paths.root.parent))
    data = json.loads(r.stdout)
    assert r.returncode == 0 == data["exit_code"], r.stderr
    assert data["run"] == paths.name and data["command"] == "stop"
    assert data["ack"]["type"] == "control_ack" and data["ack"]["id"] == data["id"] and data["ack"]["ok"]
    assert data["finished"]["state"] == "stopped"
    assert any(e["type"] == "checkpoint" for e in data["events"])
    assert proc.pid in data["exit"]["pids"] and data["exit"]["alive"] == []
    assert finish(proc, paths)["finished"]["state"] == "stopped"
    again = cli("stop", paths.name, "--json", "--runs-dir", str(paths.root.parent))
    assert again.returncode == 2 and "has already ended: stopped" in json_error(again.stdout, 2, again.stderr)["error"]
