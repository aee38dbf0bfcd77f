"""The hostile part of the bad-input corpus: inputs built to hang, crash or exhaust a reader — special
files (FIFOs, sockets, devices, symlink loops), 5,000 nested brackets, YAML alias bombs, ``1e400``,
5,001-digit integers, NaN — and run folders tampered with in every way a reader can meet. None of it
can sit in git (FIFOs, sockets and links), so ``build(root)`` makes it next to a copy of the committed
corpus; tests/unit/test_hostile_corpus.py runs every case through the real `zerotui` command.

    python tests/corpus/make_hostile.py /tmp/hostile     # to look at them by hand (FIFOs and all)
"""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

DEEP = 5000                      # brackets: past Python's recursion limit in any recursive parser
HUGE_INT = "9" * 5001            # past Python's 4,300-digit int limit
BIG_INT = "9" * 30               # past 2**63, short enough to parse
BOMB = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"] + [
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def _socket(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()  # the socket file stays


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


#: plan file name -> content (str), or a special kind: ("fifo",), ("socket",), ("link", target)
PLANS: dict[str, object] = {
    "deep_top.yaml": "[" * DEEP + "]" * DEEP,
    "deep_overrides.yaml": "model: tiny\nds_overrides: " + "[" * DEEP + "]" * DEEP + "\n",
    "deep_mapping.yaml": "model: tiny\nds_overrides: " + "{a: " * 40 + "1" + "}" * 40 + "\n",
    "deep_block.yaml": "model: tiny\nds_overrides:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(300))
                       + "  " * 301 + "b: 1\n",
    "deep_model.yaml": "model: " + "[" * 40 + "]" * 40 + "\n",
    "alias_bomb.yaml": "\n".join(BOMB) + "\n",
    "alias_bomb_overrides.yaml": "model: tiny\nds_overrides:\n" + "".join(f"  {ln}\n" for ln in BOMB),
    "alias_bomb_targets.yaml": "\n".join(f"x{ln}" for ln in BOMB) + "\nmethod: lora\nlora_targets: *a8\n",
    "inf_grad_clip.yaml": "model: tiny\ngrad_clip: .inf\n",
    "neg_inf_grad_clip.yaml": "model: tiny\ngrad_clip: -.inf\n",
    "nan_lr.yaml": "model: tiny\nlr: .nan\n",
    "nan_upper_lr.yaml": "model: tiny\nlr: .NaN\n",
    "nan_epochs.yaml": "model: tiny\nepochs: .nan\n",
    "big_float_lr.yaml": "model: tiny\nlr: 1e400\n",
    "big_float_eval.yaml": "model: tiny\neval_fraction: -1e400\n",
    "huge_int_seq.yaml": f"model: tiny\nseq_len: {HUGE_INT}\n",
    "big_int_micro.yaml": f"model: tiny\nmicro_batch: {BIG_INT}\n",
    "big_int_alpha.yaml": "model: tiny\nmethod: lora\nlora_alpha: 99999999999999999999\n",
    "big_int_steps.yaml": "model: tiny\nmax_steps: 99999999999999999999\n",
    "big_int_seed.yaml": "model: tiny\nseed: 99999999999999999999\n",
    "huge_int_overrides.yaml": f"model: tiny\nds_overrides:\n  train_micro_batch_size_per_gpu: {HUGE_INT}\n",
    "big_int_overrides.yaml": f"model: tiny\nds_overrides:\n  steps_per_print: {BIG_INT}\n",
    "inf_overrides.yaml": "model: tiny\nds_overrides:\n  gradient_clipping: .inf\n",
    "nan_overrides.yaml": "model: tiny\nds_overrides:\n  optimizer:\n    params:\n      lr: .nan\n",
    "big_float_overrides.yaml": "model: tiny\nds_overrides:\n  gradient_clipping: 1.0e+400\n",
    "too_large.yaml": "model: tiny\n" + ("# padding padding padding padding padding padding padding\n" * 40000),
    "many_values.yaml": "model: tiny\nmethod: lora\nlora_targets:\n" + "".join(f"  - m{i}\n" for i in range(12000)),
    "long_name.yaml": "model: tiny\nname: " + "x" * 200_000 + "\n",
    "long_unknown_key.yaml": "model: tiny\n" + "k" * 100_000 + ": 1\n",
    "nonstring_key.yaml": "model: tiny\nds_overrides: {1: 2}\n",
    "date_seed.yaml": "model: tiny\nseed: 2024-01-01\n",
    "binary_name.yaml": "model: tiny\nname: !!binary aGVsbG8=\n",
    "set_targets.yaml": "model: tiny\nmethod: lora\nlora_targets: !!set {q_proj, v_proj}\n",
    "python_tag.yaml": "model: tiny\nname: !!python/object/apply:os.system ['touch PWNED']\n",
    "fifo.yaml": ("fifo",),
    "socket.yaml": ("socket",),
    "link_to_fifo.yaml": ("link", "fifo.yaml"),
    "link_to_dev_zero.yaml": ("link", "/dev/zero"),
    "link_loop.yaml": ("link", "link_loop.yaml"),
}

#: data file name -> content or special kind (train --data DATA)
DATA: dict[str, object] = {
    "fifo.jsonl": ("fifo",), "fifo.json": ("fifo",), "fifo.csv": ("fifo",), "fifo.parquet": ("fifo",),
    "fifo.txt": ("fifo",), "socket.jsonl": ("socket",), "link_to_fifo.jsonl": ("link", "fifo.jsonl"),
    "link_loop.jsonl": ("link", "link_loop.jsonl"), "link_to_dev_zero.jsonl": ("link", "/dev/zero"),
    "deep.json": "[" * DEEP + "]" * DEEP,
    "deep_lines.jsonl": ("[" * DEEP + "]" * DEEP + "\n") * 3,
    "huge_int.jsonl": f'{{"text": "a", "n": {HUGE_INT}}}\n' * 3,
    "huge_int.json": f'[{{"text": "a", "n": {HUGE_INT}}}]',
}

#: model folder -> config.json content (or a special kind for config.json itself)
_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 1024}


def _cfg(**changes: object) -> str:
    return json.dumps({**_LLAMA, **changes})


MODELS: dict[str, object] = {
    "hidden_size_0": _cfg(hidden_size=0), "hidden_size_negative": _cfg(hidden_size=-64),
    "hidden_size_text": _cfg(hidden_size="big"), "hidden_size_float": _cfg(hidden_size=64.5),
    "hidden_size_bool": _cfg(hidden_size=True), "hidden_size_huge": _cfg(hidden_size=10**12),
    "layers_0": _cfg(num_hidden_layers=0), "heads_0": _cfg(num_attention_heads=0),
    "vocab_0": _cfg(vocab_size=0), "intermediate_negative": _cfg(intermediate_size=-1),
    "config_inf": _cfg().replace('"hidden_size": 64', '"hidden_size": 1e400'),
    "config_nan": _cfg().replace('"vocab_size": 1024', '"vocab_size": NaN'),
    "config_huge_int": _cfg().replace('"hidden_size": 64', f'"hidden_size": {HUGE_INT}'),
    "config_deep": "[" * DEEP + "]" * DEEP,
    "config_fifo": ("fifo",), "config_socket": ("socket",), "config_link_zero": ("link", "/dev/zero"),
    "config_folder": ("folder",),
}


def _put(path: Path, spec: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(spec, str):
        path.write_text(spec, encoding="utf-8")
    elif spec == ("fifo",):
        _fifo(path)
    elif spec == ("socket",):
        _socket(path)
    elif spec == ("folder",):
        path.mkdir()
    else:
        _link(path, spec[1])  # type: ignore[index]


def build(root: Path) -> None:
    """Write the hostile plans, data files and model folders under ``root``."""
    for name, spec in PLANS.items():
        _put(root / "hostile" / name, spec)
    for name, spec in DATA.items():
        _put(root / "hostile-data" / name, spec)
    for name, spec in MODELS.items():
        folder = root / "hostile-models" / name
        folder.mkdir(parents=True, exist_ok=True)
        _put(folder / "config.json", spec)
        (folder / "tokenizer_config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(b"\0" * 64)


# -- run folders ----------------------------------------------------------------------------------

GOOD_STATUS = {"state": "completed", "pid": 1, "pids": [1], "heartbeat": 1.7e9, "started": 1.7e9 - 60,
               "finished": 1.7e9, "step": 4, "reason": "max_steps reached"}
PLAN_YAML = "name: tampered\nmodel: tiny\nmax_steps: 4\n"
#: Where the tampered links point: a file next to the runs folder, so a test sees any write through them.
OUTSIDE = "../../outside.txt"


def _status(**changes: object) -> str:
    return json.dumps({**GOOD_STATUS, "state": "stopped", **changes})


#: damage kind -> (file in the run folder, what to put there). Each makes one run folder.
DAMAGE: dict[str, tuple[str, object]] = {
    "status-fifo": ("status.json", ("fifo",)),
    "status-socket": ("status.json", ("socket",)),
    "status-link": ("status.json", ("link", OUTSIDE)),
    "status-link-loop": ("status.json", ("link", "status.json")),
    "status-folder": ("status.json", ("folder",)),
    "status-not-json": ("status.json", "{not json"),
    "status-list": ("status.json", "[1, 2, 3]"),
    "status-pids-int": ("status.json", _status(pids=5)),
    "status-pids-strings": ("status.json", _status(pids=["a", "b"])),
    "status-heartbeat-word": ("status.json", _status(heartbeat="soon")),
    "status-pid-word": ("status.json", _status(pid="init")),
    "status-state-number": ("status.json", _status(state=7)),
    "status-state-unknown": ("status.json", _status(state="exploded")),
    "status-step-word": ("status.json", _status(step="four")),
    "status-deep": ("status.json", "[" * DEEP + "]" * DEEP),
    "status-huge-int": ("status.json", _status().replace('"step": 4', f'"step": {HUGE_INT}')),
    "status-too-large": ("status.json", json.dumps({**GOOD_STATUS, "pad": "x" * (5 << 20)})),
    "events-fifo": ("events.jsonl", ("fifo",)),
    "events-link": ("events.jsonl", ("link", OUTSIDE)),
    "events-folder": ("events.jsonl", ("folder",)),
    "plan-fifo": ("plan.yaml", ("fifo",)),
    "plan-link": ("plan.yaml", ("link", OUTSIDE)),
    "ds-config-fifo": ("ds_config.json", ("fifo",)),
    "hardware-fifo": ("hardware.json", ("fifo",)),
    "control-fifo": ("control.jsonl", ("fifo",)),
    "control-link": ("control.jsonl", ("link", "../../outside-control.jsonl")),
    "log-fifo": ("worker.log", ("fifo",)),
    "checkpoints-file": ("checkpoints", "not a folder"),
}


def build_runs(runs: Path) -> dict[str, Path]:
    """One good, completed run and one run folder per damage kind; returns {kind: folder}."""
    out = {}
    runs.mkdir(parents=True, exist_ok=True)
    (runs.parent / "outside.txt").write_text("a file outside every run folder\n")
    for i, (kind, (name, spec)) in enumerate([("good", ("", None)), *DAMAGE.items()]):
        root = runs / f"20240101-0000{i:02d}-{kind}"
        (root / "checkpoints").mkdir(parents=True)
        (root / "plan.yaml").write_text(PLAN_YAML)
        (root / "events.jsonl").write_text(json.dumps({"v": 1, "t": 1.7e9, "type": "run_finished",
                                                      "state": "completed", "reason": "done"}) + "\n")
        (root / "status.json").write_text(json.dumps(GOOD_STATUS if kind == "good" else
                                                     {**GOOD_STATUS, "state": "stopped"}))
        if name:
            target = root / name
            if target.is_dir() and not target.is_symlink():
                target.rmdir()
            elif os.path.lexists(target):
                target.unlink()
            _put(target, spec)
        out[kind] = root
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-corpus")
    build(target)
    build_runs(target / "runs")
    print(target)
