"""`zerotui chat` and `zerotui eval` on runs the real engine trained: the answers are the model's own
(greedy answers equal a direct ``generate`` on the same weights, every time), the eval event's perplexity
is exp of the held-out loss computed here token by token, its ROUGE-L is rouge-score's on the printed
answers, and bad requests end in one line naming what exists."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest
import torch
from chat_shared import PROMPT, _env, cache, finished_run  # noqa: F401 (_env, cache: fixtures)
from engine_runs import events, make_run, run_engine
from zerotui.core.errors import RunError
from zerotui.core.run.folder import write_status

NEW = 16


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory, cache):
    return finished_run(tmp_path_factory.mktemp("runs") / "20260101-000000-lora", cache, method="lora", lr=1e-2,
                        max_steps=10, save_interval=5, lora_targets=["q_proj", "v_proj"])


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, cache):
    return finished_run(tmp_path_factory.mktemp("runs") / "20260101-000000-full", cache, lr=1e-2, max_steps=10,
                        save_interval=0)


def adapted(run):
    """The LoRA run's model built here, without zerotui: the tiny base plus final/'s adapter."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    from zerotui.core.model.tiny import materialise

    base = AutoModelForCausalLM.from_pretrained(str(materialise(42)), dtype=torch.bfloat16)
    return PeftModel.from_pretrained(base, str(run.final)).eval()


def greedy(model, tokenizer, prompt):
    text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                         add_generation_prompt=True)
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=NEW, pad_token_id=tokenizer.pad_token_id)
    return tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def test_chat_answers_are_the_adapted_models_greedy_text(lora_run, zerotui_cli):
    from transformers import AutoTokenizer
    from zerotui.core.model.tiny import materialise

    argv = ("chat", str(lora_run.root), "--prompt", PROMPT, "--max-new-tokens", str(NEW))
    first, second = zerotui_cli(*argv, "--json"), zerotui_cli(*argv, "--json")
    assert first.returncode == 0, first.stderr
    answer = json.loads(first.stdout)
    assert answer["source"] == "final" and answer["step"] == 10
    assert json.loads(second.stdout)["text"] == answer["text"]  # greedy: the same every time
    tok = AutoTokenizer.from_pretrained(str(lora_run.final))
    assert answer["text"] == greedy(adapted(lora_run), tok, PROMPT)
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(materialise(42)), dtype=torch.bfloat16).eval()
    assert greedy(base, tok, PROMPT) != answer["text"]  # the adapter is in the answer

    streamed = zerotui_cli(*argv)  # the streamed pieces make up the same text
    assert streamed.returncode == 0 and streamed.stdout == answer["text"] + "\n"


def test_a_terminal_gets_a_conversation(lora_run, cache):
    """stdin a terminal: turns until an empty line; /reset forgets, so the same question gets the same
    answer as a one-shot --prompt."""
    master, slave = os.openpty()
    env = dict(os.environ, ZEROTUI_CACHE_DIR=str(cache))
    os.write(master, f"{PROMPT}\n/reset\n{PROMPT}\n\n".encode())
    proc = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "chat", str(lora_run.root),
                           "--max-new-tokens", str(NEW)], stdin=slave, capture_output=True, text=True, check=False,
                          env=env, timeout=300)
    os.close(slave)
    os.close(master)
    assert proc.returncode == 0, proc.stderr
    from transformers import AutoTokenizer

    want = greedy(adapted(lora_run), AutoTokenizer.from_pretrained(str(lora_run.final)), PROMPT)
    assert proc.stdout.count("you> ") == 4 and proc.stdout.count(f"model> {want}\n") == 2, proc.stdout


def heldout_loss_here(model, tokens):
    """Mean cross-entropy per target token over the eval split, one unpadded example at a time."""
    nll, n = 0.0, 0
    with torch.no_grad():
        for i in range(len(tokens)):
            ids, labels = tokens.example(i)
            logits = model(input_ids=ids.long()[None]).logits[0, :-1].float()
            target = labels.long()[1:]
            keep = target != -100
            nll += float(torch.nn.functional.cross_entropy(logits[keep], target[keep], reduction="sum"))
            n += int(keep.sum())
    return nll / n, n


def test_eval_appends_perplexity_and_rouge_l(lora_run, zerotui_cli):
    from rouge_score import rouge_scorer
    from transformers import AutoTokenizer
    from zerotui.core.data.prepare import prepare_data
    from zerotui.core.plan.schema import load_plan

    trained = events(lora_run, "eval")  # the loop's own end-of-run eval carries the perplexity already
    assert trained and trained[-1]["perplexity"] == pytest.approx(math.exp(trained[-1]["loss"]))
    before = len(trained)
    r = zerotui_cli("eval", str(lora_run.root), "--samples", "4", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    evals = events(lora_run, "eval")
    assert len(evals) == before + 1 and evals[-1] == out["event"]
    ev = evals[-1]
    assert ev["step"] == 10 and ev["source"] == "final" and ev["samples"] == 4

    tok = AutoTokenizer.from_pretrained(str(lora_run.final))
    split = prepare_data(load_plan(lora_run.plan), tok).eval
    loss, n = heldout_loss_here(adapted(lora_run), split)
    assert ev["tokens"] == n
    assert math.isfinite(ev["perplexity"]) and ev["perplexity"] == pytest.approx(math.exp(loss), rel=2e-3)
    assert ev["loss"] == pytest.approx(loss, rel=2e-3)

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    gens = out["generations"]
    assert len(gens) == 4 and all(g["reference"] for g in gens)
    mean = sum(scorer.score(g["reference"], g["generated"])["rougeL"].fmeasure for g in gens) / len(gens)
    assert 0.0 <= ev["rougeL"] <= 1.0 and ev["rougeL"] == pytest.approx(mean, abs=1e-12)

    listed = zerotui_cli("runs", "--runs-dir", str(lora_run.root.parent), "--json")
    rec = next(x for x in json.loads(listed.stdout) if x["name"] == lora_run.name)
    assert rec["perplexity"] == ev["perplexity"] and rec["rougeL"] == ev["rougeL"]


def test_full_run_chats_from_final_and_a_checkpoint(full_run):
    """A full fine-tune: final/'s consolidated weights, and the end checkpoint's fp32 masters."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from zerotui.core.infer.generate import Settings, reply
    from zerotui.core.infer.weights import load_run_model

    rm = load_run_model(full_run)
    settings = Settings(max_new_tokens=NEW)
    text = reply(rm.model, rm.tokenizer, rm.plan, [{"role": "user", "content": PROMPT}], settings)
    direct = AutoModelForCausalLM.from_pretrained(str(full_run.final), dtype=torch.bfloat16).eval()
    assert text == greedy(direct, AutoTokenizer.from_pretrained(str(full_run.final)), PROMPT)
    pieces: list[str] = []
    assert reply(rm.model, rm.tokenizer, rm.plan, [{"role": "user", "content": PROMPT}], settings,
                 on_text=pieces.append) == text == "".join(pieces)
    ck = load_run_model(full_run, "latest")
    assert (ck.source, ck.step) == ("step10", 10)
    for name, w in direct.state_dict().items():  # the fp32 masters, cast to bf16: what the engine held
        assert torch.equal(ck.model.state_dict()[name], w), name
    # and it runs: the buffers no checkpoint holds (RoPE's inv_freq) were made, not left on the meta device
    assert not [n for n, b in ck.model.named_buffers() if b.device.type == "meta"]
    assert reply(ck.model, ck.tokenizer, ck.plan, [{"role": "user", "content": PROMPT}], settings) == text


def test_bad_requests_name_what_exists(tmp_path, lora_run, zerotui_cli):
    from zerotui.core.infer.weights import load_run_model

    unknown = zerotui_cli("chat", "no-such-run", "--prompt", "hi")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "no run named 'no-such-run'" in unknown.stderr

    empty = make_run(tmp_path / "20260101-000000-never-saved")  # failed before its first checkpoint
    write_status(empty, state="failed", reason="killed at step 3")
    r = zerotui_cli("eval", str(empty.root))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "no weights to evaluate (no final/; no complete checkpoint)" in r.stderr and "Traceback" not in r.stderr

    r = zerotui_cli("chat", str(lora_run.root), "--prompt", PROMPT, "--temperature", "-1")
    assert r.returncode == 2 and "--temperature -1.0 is out of range" in r.stderr

    with pytest.raises(RunError) as err:
        load_run_model(lora_run, "step7")
    assert "has no checkpoint 'step7'" in err.value.message and "step5, step10" in err.value.hint

    copy = tmp_path / "20260101-000000-damaged"
    shutil.copytree(lora_run.root, copy, ignore=shutil.ignore_patterns("final"))
    victim = next((copy / "checkpoints" / "step10").glob("*model_states.pt"))
    victim.write_bytes(victim.read_bytes()[:100])
    r = zerotui_cli("chat", str(copy), "--checkpoint", "step10", "--prompt", PROMPT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "checkpoint step10" in r.stderr and "is damaged" in r.stderr
    # Without --checkpoint the damaged newest one is passed over for step5, and the user is told.
    r = zerotui_cli("chat", str(copy), "--prompt", PROMPT, "--json", "--max-new-tokens", "4")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["source"] == "step5" and "skipped checkpoint step10" in r.stderr
    # The file is named, in one sentence (torch's own message ran on: "...there is a high)")
    assert f"step10: {victim.name} is cut short or damaged" in r.stderr, r.stderr


def test_a_damaged_final_is_passed_over_for_the_newest_checkpoint(tmp_path, full_run, zerotui_cli):
    copy = tmp_path / "20260101-000000-final-damaged"
    shutil.copytree(full_run.root, copy)
    (copy / "final" / "model.safetensors").write_bytes(os.urandom(4000))
    r = zerotui_cli("chat", str(copy), "--prompt", PROMPT, "--json", "--max-new-tokens", "4")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["source"] == "step10"
    assert "zerotui chat: skipped final/: model.safetensors is damaged" in r.stderr and "Traceback" not in r.stderr
    asked = zerotui_cli("eval", str(copy), "--checkpoint", "final")  # asked for by name: refused, not swapped
    assert asked.returncode == 2 and asked.stderr.count("\n") == 1, asked.stderr
    assert "final/model.safetensors is damaged" in asked.stderr and "--checkpoint latest" in asked.stderr


@pytest.fixture(scope="module")
def qlora_run(tmp_path_factory, cache):
    paths = make_run(tmp_path_factory.mktemp("runs") / "20260101-000000-qlora", method="qlora", precision="fp32",
                     lr=1e-2, max_steps=6, log_interval=2, save_interval=3, lora_targets=["q_proj", "v_proj"])
    assert run_engine(paths, cache=cache)["state"] == "completed"
    return paths


def test_qlora_answers_come_from_the_4bit_base_and_the_adapter(qlora_run):
    """Unmerged: bitsandbytes' 4-bit layers under PEFT's adapter, as in training (not merge's dequantised
    copy), and the greedy answer equals one from a base quantised here with the plan's settings."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from zerotui.core.infer.generate import Settings, reply
    from zerotui.core.infer.weights import load_run_model
    from zerotui.core.model.quantise import prepare_base, quantization_config
    from zerotui.core.model.tiny import materialise

    rm = load_run_model(qlora_run)
    assert type(rm.model.base_model.model.model.layers[0].self_attn.q_proj.base_layer).__name__ == "Linear4bit"
    text = reply(rm.model, rm.tokenizer, rm.plan, [{"role": "user", "content": PROMPT}], Settings(max_new_tokens=NEW))
    base = AutoModelForCausalLM.from_pretrained(str(materialise(42)), dtype=torch.float32, device_map={"": "cpu"},
                                                quantization_config=quantization_config(rm.plan, torch.float32))
    prepare_base(base)
    direct = PeftModel.from_pretrained(base, str(qlora_run.final)).eval()
    assert text == greedy(direct, AutoTokenizer.from_pretrained(str(qlora_run.final)), PROMPT)
    ck = load_run_model(qlora_run, "step3")  # a checkpoint's fp32 adapters over the same 4-bit base
    assert ck.source == "step3" and type(ck.model.base_model.model.model.layers[0].self_attn.q_proj.base_layer
                                         ).__name__ == "Linear4bit"
