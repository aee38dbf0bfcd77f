"""A short name that matches several runs: `stop`, `attach` and `serve` (which act on a live run) take the
one live run among them and say so; `resume` (which acts on ended runs) and the others still refuse, naming every
match with its state."""
from __future__ import annotations

import json
import os
import time

import pytest
from cli_capture import run

from zerotui.core.errors import RunError
from zerotui.core.run.folder import new_run_dir, read_control, resolve_run, write_status


def make(base, name, state, age):
    paths = new_run_dir(base, name, now=time.time() - age)
    paths.plan.write_text(f"name: {name}\n")
    write_status(paths, state=state, pids=[os.getpid()] if state == "running" else [])
    return paths


@pytest.fixture
def runs(tmp_path):
    base = tmp_path / "runs"
    return base, {"stopped": make(base, "demo-a", "stopped", 300), "completed": make(base, "demo-b", "completed", 200),
                  "running": make(base, "demo-c", "running", 100)}


def test_prefer_live_takes_the_one_live_match_and_says_which(runs):
    base, made = runs
    told: list[str] = []
    assert resolve_run("demo", base, prefer_live=True, note=told.append) == made["running"]
    assert told == [f"'demo' matches 3 runs; {made['running'].name} is the only live one: using it"]


def test_without_prefer_live_every_match_is_named_with_its_state(runs):
    base, made = runs
    with pytest.raises(RunError) as err:
        resolve_run("demo", base, prefer_live=False)
    for state, paths in made.items():
        assert f"{paths.name} ({state})" in err.value.message


def test_two_live_matches_are_still_ambiguous(runs):
    base, made = runs
    other = make(base, "demo-d", "running", 50)
    with pytest.raises(RunError, match="matches several runs") as err:
        resolve_run("demo", base, prefer_live=True, note=lambda _line: pytest.fail("nothing was chosen"))
    assert f"{other.name} (running)" in err.value.message and f"{made['running'].name} (running)" in err.value.message


def test_stop_sends_to_the_live_match(runs, capsys, monkeypatch):
    import zerotui.cli.commands.stop as stop

    base, made = runs
    monkeypatch.setattr(stop, "ACK_TIMEOUT_S", 0.1)  # nobody acknowledges in a test: give up at once
    code, out, err = run(capsys, "stop", "demo", "--runs-dir", str(base))
    assert f"zerotui stop: 'demo' matches 3 runs; {made['running'].name} is the only live one" in err
    assert code == 1 and f"sent stop to {made['running'].name}" in out
    assert [c["command"] for c in read_control(made["running"])[0]] == ["stop"]
    assert not made["stopped"].control.exists()


def test_attach_json_names_the_live_match(runs, capsys):
    base, made = runs
    code, out, err = run(capsys, "attach", "demo", "--json", "--runs-dir", str(base))
    assert code == 0 and json.loads(out)["default"] == made["running"].name
    assert "is the only live one" in err


def test_resume_lists_the_candidates_with_their_states(runs, capsys):
    base, made = runs
    code, out, err = run(capsys, "resume", "demo", "--runs-dir", str(base))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert all(f"{p.name} ({state})" in err for state, p in made.items())


class _Server:
    """What `serve` needs of textual-serve's server, without listening: the address, and a serve() that ends."""

    public_url = "http://127.0.0.1:8000"
    console = None
    served: list[str] = []

    def __init__(self, command: str) -> None:
        self.command = command

    def serve(self) -> None:
        _Server.served.append(self.command)


@pytest.mark.parametrize("as_json", [False, True])
def test_serve_shows_the_live_match_and_says_which(runs, capsys, monkeypatch, as_json):
    import zerotui.cli.commands.serve as serve
    import zerotui.tui.serve as tui_serve

    base, made = runs
    live = made["running"]
    _Server.served = []
    monkeypatch.setattr(serve, "_check_address", lambda host, port: None)  # nothing listens in a test
    monkeypatch.setattr(tui_serve, "make_server", lambda command, *_rest: _Server(command))
    code, out, err = run(capsys, "serve", "demo", "--runs-dir", str(base), *(["--json"] if as_json else []))
    assert code == 0
    assert err.splitlines()[0] == f"zerotui serve: 'demo' matches 3 runs; {live.name} is the only live one: using it"
    assert len(_Server.served) == 1 and str(live.root) in _Server.served[0]
    if as_json:
        assert json.loads(out)["run"] == live.name  # stdout stays one document
    else:
        assert f"zerotui serve: run {live.name} at " in out
