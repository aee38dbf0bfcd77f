"""The bad-input corpus, hostile part: inputs made to hang, crash or exhaust zerotui (special files,
5,000 nested brackets, alias bombs, 1e400, 5,001-digit integers, NaN) and run folders tampered with in
every way a reader can meet (tests/corpus/make_hostile.py). Each case runs the real `zerotui` command in
a fresh process under a time limit: exit 2, at most 3 lines on stderr and none on stdout, no traceback,
the file (or run) named, and nothing under the corpus written, changed or removed.
"""
from __future__ import annotations

import importlib.util
import json

import pytest
from corpus_shared import CORPUS, corpus, snapshot, zerotui  # noqa: F401

LIMIT_S = 60  # generous for a loaded CI machine; a hang is what this catches, not slowness


def _hostile():
    spec = importlib.util.spec_from_file_location("corpus_make_hostile", CORPUS / "make_hostile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


H = _hostile()


@pytest.fixture(scope="module")
def hostile(corpus):
    H.build(corpus)
    H.build_runs(corpus / "runs")
    return corpus


PLAN_CASES = []
for _name in H.PLANS:
    _p = f"hostile/{_name}"
    PLAN_CASES += [(f"plan-train-{_name}", ["train", _p], [_name]),
                   (f"plan-estimate-{_name}", ["estimate", "--plan", _p], [_name]),
                   (f"plan-export-{_name}", ["export", _p, "-o", "exported"], [_name])]

T = ["train", "tiny-cpu-demo"]
_BIG = "9" * 400
ARG_CASES = [
    ("gpu-mem-400-digits", ["estimate", "--gpu-mem", _BIG], ["--gpu-mem"]),
    ("gpu-mem-400-digits-fit", ["fit", "--gpu-mem", _BIG], ["--gpu-mem"]),
    ("ram-400-digits", ["estimate", "--ram", _BIG], ["--ram"]),
    ("ram-400-digits-fit", ["fit", "--ram", _BIG + "GiB"], ["--ram"]),
    ("gpu-mem-exabytes", ["estimate", "--gpu-mem", "99999999999999999999P"], ["--gpu-mem", "larger"]),
    ("gpu-mem-cap-400-digits", ["estimate", "--gpu-mem-cap", _BIG], ["gpu_mem_cap"]),
    ("gpu-mem-cap-400-digits-train", [*T, "--gpu-mem-cap", _BIG], ["gpu_mem_cap"]),
    ("seq-len-5001-digits", [*T, "--seq-len", "9" * 5001], ["--seq-len"]),
    ("max-steps-30-digits", [*T, "--max-steps", "9" * 30], ["max_steps"]),
    ("seed-30-digits", ["estimate", "--seed", "9" * 30], ["seed"]),
    ("lora-alpha-30-digits", ["estimate", "--method", "lora", "--lora-alpha", "9" * 30], ["lora_alpha"]),
    ("empty-positional-train", ["train", ""], ["empty"]),
    ("empty-positional-export", ["export", "", "-o", "exported"], ["empty"]),
    ("empty-preset-train", ["train", "--preset", ""], ["empty"]),
    ("empty-preset-estimate", ["estimate", "--preset", ""], ["empty"]),
    ("blank-positional-train", ["train", "   "], ["empty"]),
]
for _field in ("lr", "grad-clip", "epochs", "eval-fraction", "lora-dropout", "adam-eps", "min-lr-ratio",
               "weight-decay", "save-minutes", "stall-minutes", "fp16-min-loss-scale"):
    for _value in ("nan", "inf", "-inf"):
        _cmd = ["estimate"] if _value != "-inf" else ["train", "tiny-cpu-demo"]
        ARG_CASES.append((f"{_field}-{_value}", [*_cmd, f"--{_field}={_value}"], [_field.replace("-", "_")]))
for _name, _json in (("inf", '{"gradient_clipping": 1e400}'), ("nan", '{"gradient_clipping": NaN}'),
                     ("infinity", '{"gradient_clipping": Infinity}'), ("neg-infinity", '{"x": -Infinity}'),
                     ("huge-int", '{"steps_per_print": ' + "9" * 5001 + "}"),
                     ("big-int", '{"steps_per_print": ' + "9" * 30 + "}"),
                     ("deep", "[" * 5000 + "]" * 5000), ("deep-object", '{"a": ' * 40 + "1" + "}" * 40),
                     ("nested-inf", '{"zero_optimization": {"stage": 1e400}}')):
    ARG_CASES += [(f"overrides-{_name}", ["estimate", "--ds-overrides", _json], ["--ds-overrides"]),
                  (f"overrides-{_name}-export", ["export", "tiny-cpu-demo", "-o", "exported", "--ds-overrides",
                                                  _json], ["--ds-overrides"])]

DATA_CASES = [(f"data-{n}", [*T, "--data", f"hostile-data/{n}"], [n]) for n in H.DATA]
DATA_CASES.append(("data-dev-zero", [*T, "--data", "/dev/zero"], ["/dev/zero"]))

MODEL_CASES = []
for _name in H.MODELS:
    MODEL_CASES += [(f"model-estimate-{_name}", ["estimate", "--model", f"hostile-models/{_name}"], [_name]),
                    (f"model-train-{_name}", [*T, "--model", f"hostile-models/{_name}"], [_name])]
for _name in ("hidden_size_0", "config_deep", "config_fifo", "config_inf"):
    MODEL_CASES.append((f"model-config-{_name}", ["estimate", "--model-config",
                                                  f"hostile-models/{_name}/config.json"], [_name]))

RUN_CASES = []
for _i, _kind in enumerate(H.DAMAGE, start=1):
    _run = f"20240101-0000{_i:02d}-{_kind}"
    RUN_CASES += [(f"run-resume-{_kind}", ["resume", _run], [_run, "damaged"]),
                  (f"run-stop-{_kind}", ["stop", _run], [_run, "damaged"]),
                  (f"run-merge-{_kind}", ["merge", _run, "-o", "merged"], [_run, "damaged"]),
                  (f"run-attach-{_kind}", ["attach", _run], [_run, "damaged"])]

CASES = PLAN_CASES + ARG_CASES + DATA_CASES + MODEL_CASES + RUN_CASES


def test_the_hostile_corpus_is_large_and_every_case_is_distinct():
    assert len(CASES) >= 250, len(CASES)
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("argv, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input_is_refused_in_a_few_lines_exit_2_nothing_written(hostile, argv, words):
    before = snapshot(hostile)
    r = zerotui(hostile, *argv, timeout=LIMIT_S)  # TimeoutExpired (a hang) fails the case
    out = r.stdout + r.stderr
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in out
    lines = r.stderr.splitlines()
    assert 1 <= len(lines) <= 3, r.stderr[-3000:]
    assert all(len(ln) <= 1000 for ln in lines), [len(ln) for ln in lines]
    assert lines[0].startswith("zerotui"), lines[0]
    assert r.stdout == "", r.stdout[-2000:]
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert snapshot(hostile) == before


def test_runs_lists_every_damaged_folder_and_the_good_run_as_it_is(hostile):
    r = zerotui(hostile, "runs", "--all", timeout=LIMIT_S)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stdout + r.stderr
    rows = {ln.split()[0]: ln.split()[1] for ln in r.stdout.splitlines()[1:] if ln and not ln.startswith(" ")}
    assert rows.pop("20240101-000000-good") == "completed"
    assert len(rows) == len(H.DAMAGE) and set(rows.values()) == {"damaged"}, rows
    r = zerotui(hostile, "runs", "--all", "--json", timeout=LIMIT_S)
    records = {rec["name"]: rec for rec in json.loads(r.stdout)}
    assert all(rec["note"] for name, rec in records.items() if name != "20240101-000000-good")


@pytest.mark.parametrize("argv, words", [
    (["stop", "20240101-000000-good"], ["has already ended: completed"]),
    (["resume", "20240101-000000-good"], ["completed at step 4", "nothing to resume"]),
    (["stop", "good"], ["has already ended"]),
], ids=["stop-good", "resume-good", "stop-good-by-fragment"])
def test_commands_on_the_good_run_are_unaffected_by_the_damaged_ones(hostile, argv, words):
    before = snapshot(hostile)
    r = zerotui(hostile, *argv, timeout=LIMIT_S)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert "damaged" not in r.stderr
    assert snapshot(hostile) == before


def test_hostile_user_presets_do_not_break_the_others(hostile):
    presets = hostile / "user-presets"
    presets.mkdir(exist_ok=True)
    for name in ("deep_top.yaml", "alias_bomb.yaml", "too_large.yaml", "python_tag.yaml"):
        (presets / name).write_bytes((hostile / "hostile" / name).read_bytes())
    H._put(presets / "fifo.yaml", ("fifo",))
    try:
        r = zerotui(hostile, "presets", timeout=LIMIT_S)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert "tiny-cpu-demo" in r.stdout and "deep_top" in r.stdout
        r = zerotui(hostile, "estimate", "tiny-cpu-demo", timeout=LIMIT_S)
        assert r.returncode == 0, r.stderr[-2000:]
        for name in ("deep_top", "alias_bomb", "too_large", "python_tag"):
            r = zerotui(hostile, "estimate", name, timeout=LIMIT_S)
            assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr[-2000:]
    finally:
        for p in presets.iterdir():
            p.unlink()
