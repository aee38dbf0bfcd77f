"""Security: no shell anywhere a user value reaches a subprocess, YAML loaded safely, files written with
the user's umask, control commands only from the run folder's own control.jsonl, and a model's own code
run only when the user asks for it.
"""
from __future__ import annotations

from places import CORPUS
import ast
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from security_shared import ROOT, WEIRD, _cli, _env, _modes  # noqa: F401


PRODUCT = [ROOT / "core", ROOT / "cli", ROOT / "tui", ROOT / "presets", ROOT / "scripts"]





def _product_files() -> list[Path]:
    return [p for d in PRODUCT if d.exists() for p in sorted(d.rglob("*.py"))]


SHELL_CALLS = {("os", "system"), ("os", "popen"), ("os", "execl"), ("os", "execlp"), ("os", "spawnl"),
               ("subprocess", "getoutput"), ("subprocess", "getstatusoutput"), ("pty", "spawn")}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def shell_uses(path: Path) -> list[str]:
    """Calls that hand a string to a shell: shell=True anywhere, os.system / os.popen and friends."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                found.append(f"{_rel(path)}:{node.lineno}: shell=...")
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in SHELL_CALLS:
            found.append(f"{_rel(path)}:{node.lineno}: {f.value.id}.{f.attr}()")
    return found


def test_no_product_code_hands_a_string_to_a_shell():
    files = _product_files()
    assert len(files) > 50  # the scan really covers the product
    assert [hit for p in files for hit in shell_uses(p)] == []


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """The checker itself must be able to fail."""
    bad = tmp_path / "probe.py"
    bad.write_text("import os, subprocess\nos.system('ls')\nsubprocess.run('ls', shell=True)\n"
                   "subprocess.run(['ls'], shell=False)\nos.popen('x')\n")
    assert len(shell_uses(bad)) == 3


def test_yaml_is_only_ever_loaded_safely():
    unsafe = []
    for p in _product_files():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "yaml":
                if node.func.attr in ("load", "load_all", "unsafe_load", "full_load", "unsafe_load_all",
                                      "full_load_all"):
                    unsafe.append(f"{p.relative_to(ROOT)}:{node.lineno}: yaml.{node.func.attr}")
    assert unsafe == []


def test_launcher_and_export_quote_every_user_value(tmp_path):
    """The argv the worker gets is a list; launch.sh quotes each token so a shell sees the same argv."""
    import shlex

    from zerotui.core.hardware.types import Hardware
    from zerotui.core.run.launcher import launcher_argv
    from zerotui.core.plan.schema import Plan

    weird = tmp_path / WEIRD
    weird.mkdir()
    plan = Plan(model="tiny", data=str(weird / "d.jsonl"), runs_dir=weird)
    argv = launcher_argv(plan, weird / "run", Hardware())
    assert isinstance(argv, list) and str(weird / "run") in argv

    env = _env(tmp_path)
    r = _cli("export", "tiny-cpu-demo", "-o", str(weird / "out"), "--data", str(weird / "d.jsonl"),
             "--gpus", "2", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    script = (weird / "out" / "launch.sh").read_text()
    # bash -n parses it; the exec line, split as a shell splits it, keeps the folder as one token.
    assert subprocess.run(["bash", "-n", str(weird / "out" / "launch.sh")]).returncode == 0
    exec_line = next(ln for ln in script.splitlines() if ln.startswith("exec ") and " deepspeed " in ln)
    assert any(tok.startswith(str(weird / "out")) for tok in shlex.split(exec_line))
    assert not list(tmp_path.rglob("PWNED*"))


def test_run_files_follow_umask_022_too(tmp_path):
    """A run that fails at once in the worker still writes its folder: every file 0644, folders 0755
    (not mkstemp's 0600: other users of a shared box may be meant to read the run)."""
    rows = [{"instruction": "word " * 200, "output": "a short answer"} for _ in range(16)]
    (tmp_path / "long.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = _env(tmp_path)
    r = _cli("train", "tiny-cpu-demo", "--data", "long.jsonl", "--seq-len", "16", "--foreground",
             cwd=tmp_path, env=env, umask=0o022)
    assert r.returncode == 1 and "no answer within the first 16 tokens" in r.stderr, r.stderr[-2000:]
    (run,) = list((tmp_path / "runs").iterdir())
    modes = _modes(run)
    assert {"plan.yaml", "ds_config.json", "hardware.json", "events.jsonl", "status.json", "worker.log"} <= set(modes)
    for rel, mode in modes.items():
        want = 0o755 if (run / rel).is_dir() or rel == "." else 0o644
        assert mode == want, (rel, oct(mode))


@pytest.mark.parametrize("umask, want", [(0o022, 0o644), (0o077, 0o600)])
def test_saved_presets_and_exports_follow_umask(tmp_path, umask, want):
    code = ("import os, sys; os.umask(int(sys.argv[1], 8))\n"
            "from zerotui.core.plan.presets import load_preset, save_preset\n"
            "print(save_preset(load_preset('tiny-cpu-demo'), 'mine'))\n")
    env = _env(tmp_path)
    r = subprocess.run([sys.executable, "-c", code, oct(umask)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(Path(r.stdout.strip()).stat().st_mode) == want
    r = _cli("export", "mine", "-o", "out", cwd=tmp_path, env=env, umask=umask)
    assert r.returncode == 0, r.stderr
    for name in ("ds_config.json", "plan.yaml"):
        assert stat.S_IMODE((tmp_path / "out" / name).stat().st_mode) == want, name


def test_exported_launch_script_follows_umask_077(tmp_path):
    r = _cli("export", "tiny-cpu-demo", "-o", "out", cwd=tmp_path, env=_env(tmp_path), umask=0o077)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE((tmp_path / "out" / "launch.sh").stat().st_mode) == 0o700


PAYLOAD = 'model: tiny\nname: !!python/object/apply:os.system ["touch PWNED"]\n'


@pytest.mark.parametrize("where", ["plan", "preset"])
def test_python_object_yaml_is_refused_and_runs_nothing(tmp_path, where):
    env = _env(tmp_path)
    if where == "plan":
        (tmp_path / "evil.yaml").write_text(PAYLOAD)
        argv, named = ["train", "evil.yaml"], "evil.yaml"
    else:
        (tmp_path / "presets").mkdir()
        (tmp_path / "presets" / "evil.yaml").write_text(PAYLOAD)
        argv, named = ["train", "evil"], "user preset 'evil'"
    r = _cli(*argv, cwd=tmp_path, env=env)
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.splitlines()
    assert named in line and "refused the YAML tag" in line and "python/object/apply:os.system" in line
    assert "remove the tag" in line
    # Listing presets reads every preset file's description: safely too.
    r = _cli("presets", cwd=tmp_path, env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert not list(tmp_path.rglob("PWNED")) and not (tmp_path / "runs").exists()


def _run_folder(tmp_path: Path):
    from zerotui.core.run.folder import new_run_dir

    paths = new_run_dir(tmp_path / "runs", "sec")
    paths.plan.write_text("model: tiny\n")
    return paths


def test_a_symlinked_control_file_is_neither_obeyed_nor_written(tmp_path):
    from zerotui.core.train.control import ControlState
    from zerotui.core.errors import RunError
    from zerotui.core.run.folder import read_control, send_control
    from zerotui.core.run.inbox import ControlInbox
    from zerotui.core.run.monitor import RunTracker

    paths = _run_folder(tmp_path)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps({"t": 9e9, "id": "x1", "command": "stop-now"}) + "\n")
    paths.control.symlink_to(elsewhere)
    # The worker's side: the commands behind the link are not read.
    assert read_control(paths, 0) == ([], 0)
    control = ControlState()
    assert ControlInbox(paths, control, RunTracker()).poll() == []
    assert not control.stopping
    # A client's side: refused with a clear message, the target untouched.
    before = elsewhere.read_bytes()
    with pytest.raises(RunError, match="not a plain file"):
        send_control(paths, "stop")
    assert elsewhere.read_bytes() == before


def test_a_fifo_control_file_does_not_block_the_worker(tmp_path):
    from zerotui.core.errors import RunError
    from zerotui.core.run.folder import read_control, send_control

    paths = _run_folder(tmp_path)
    os.mkfifo(paths.control)
    assert read_control(paths, 0) == ([], 0)  # returns at once instead of waiting for a writer
    with pytest.raises(RunError, match="not a plain file"):
        send_control(paths, "stop")


def test_the_run_folders_own_control_file_still_works(tmp_path):
    from zerotui.core.run.folder import read_control, send_control

    paths = _run_folder(tmp_path)
    sent = send_control(paths, "pause", by="test")
    commands, offset = read_control(paths, 0)
    assert [c["id"] for c in commands] == [sent["id"]] and offset == paths.control.stat().st_size


@pytest.fixture
def custom_code_model(tmp_path) -> Path:
    folder = tmp_path / "custom_code"
    shutil.copytree(CORPUS / "models" / "custom_code", folder)
    (folder / "model.safetensors").write_bytes(b"not read before the check")
    return folder


@pytest.mark.parametrize("command", ["estimate", "train"])
def test_a_model_with_its_own_code_is_refused_without_opt_in(tmp_path, custom_code_model, command):
    marker = tmp_path / "REMOTE_CODE_RAN"
    env = _env(tmp_path, ZEROTUI_TEST_MARKER=str(marker))
    argv = [command] + (["tiny-cpu-demo"] if command == "train" else []) + ["--model", str(custom_code_model)]
    r = _cli(*argv, cwd=tmp_path, env=env)
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.splitlines()
    assert "ships its own Python code" in line and "auto_map" in line and "--trust-remote-code" in line
    assert not marker.exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_opting_in_lifts_the_remote_code_refusal(tmp_path, custom_code_model):
    env = _env(tmp_path, ZEROTUI_TEST_MARKER=str(tmp_path / "REMOTE_CODE_RAN"))
    r = _cli("estimate", "--model", str(custom_code_model), "--trust-remote-code", cwd=tmp_path, env=env)
    assert "ships its own Python code" not in r.stderr


def test_opting_in_lets_a_custom_code_model_be_planned(tmp_path, custom_code_model):
    marker = tmp_path / "REMOTE_CODE_RAN"
    env = _env(tmp_path, ZEROTUI_TEST_MARKER=str(marker))
    r = _cli("estimate", "--model", str(custom_code_model), "--trust-remote-code", "--json", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["model"]["params_total"] > 0
    assert marker.exists()  # with the user's consent, the folder's own code did run


def test_every_model_loader_call_passes_the_plans_choice():
    """from_pretrained / AutoConfig / AutoTokenizer calls in core/ never hard-code trust_remote_code=True."""
    hits = []
    for p in _product_files():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "trust_remote_code" and isinstance(kw.value, ast.Constant) and kw.value.value:
                        hits.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert hits == []
