"""Security of real runs on the tiny model: paths with spaces, quotes and semicolons train and run nothing
else; a run's files and final/ follow a 077 umask.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from security_shared import ROOT, WEIRD, _cli, _env, _modes  # noqa: F401


@pytest.fixture(scope="module")
def weird_run(tmp_path_factory):
    """`zerotui train` with the runs folder, the data file and the working folder all under WEIRD,
    under umask 077; returns (tmp root, the CLI result, the run folder)."""
    tmp = tmp_path_factory.mktemp("sec")
    weird = tmp / WEIRD
    (weird / "data").mkdir(parents=True)
    shutil.copy(ROOT / "core" / "assets" / "sample.jsonl", weird / "data" / f"{WEIRD}.jsonl")
    env = _env(tmp)
    r = _cli("train", "tiny-cpu-demo", "--data", str(weird / "data" / f"{WEIRD}.jsonl"),
             "--runs-dir", str(weird / "runs"), "--max-steps", "3", "--save-interval", "2", "--eval-interval", "0",
             "--foreground", cwd=weird, env=env, umask=0o077)
    runs = [p for p in (weird / "runs").iterdir() if p.is_dir()] if (weird / "runs").exists() else []
    return tmp, r, runs[0] if len(runs) == 1 else None


def test_paths_with_spaces_quotes_and_semicolons_train_and_run_nothing_else(weird_run):
    tmp, r, run = weird_run
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert run is not None and "run completed" in r.stdout
    events = [json.loads(ln) for ln in (run / "events.jsonl").read_text().splitlines()]
    started = next(e for e in events if e["type"] == "run_started")
    assert started["plan"]["data"].endswith(f"{WEIRD}.jsonl")
    assert [e["step"] for e in events if e["type"] == "step"][-1] == 3
    assert not list(tmp.rglob("PWNED*")), "a shell ran part of a path"
    assert not Path("PWNED").exists()


def test_run_files_follow_umask_077(weird_run):
    _, r, run = weird_run
    assert run is not None, r.stderr[-2000:]
    modes = _modes(run, skip="final")
    for must in ("plan.yaml", "ds_config.json", "hardware.json", "events.jsonl", "status.json", "worker.log",
                 "control.jsonl", "checkpoints"):
        if must == "control.jsonl" and must not in modes:
            continue  # only there once a command was sent
        assert must in modes, sorted(modes)
    assert any(k.startswith("checkpoints" + os.sep) for k in modes), "no checkpoint was written"
    leaky = {k: oct(m) for k, m in modes.items() if m & 0o077}
    assert leaky == {}, leaky


def test_final_model_folder_follows_umask_077(weird_run):
    _, _, run = weird_run
    assert (run / "final").is_dir()
    leaky = {k: oct(m) for k, m in _modes(run / "final").items() if m & 0o077}
    assert leaky == {}
