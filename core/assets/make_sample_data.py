"""Writes ``sample.jsonl``: the demo dataset that ships with zerotui (alpaca rows).

Every row is generated here from templates (arithmetic, unit conversions, word games, comparisons and
facts about ZeRO and zerotui), so nothing is copied from another dataset and the file can be rebuilt
byte for byte::

    python -m zerotui.core.assets.make_sample_data          # rewrites core/assets/sample.jsonl

The tasks are chosen so a model of about a million weights visibly learns them within a minute on a
CPU: short answers with a fixed shape, where most tokens are predictable from the prompt.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 1234
OUT = Path(__file__).with_name("sample.jsonl")

# Common short English words (written for this file).
WORDS = """
apple river stone cloud green table light house water paper bread music horse plant chair
garden window silver orange yellow purple winter summer autumn spring forest valley bridge
castle candle pencil rocket planet comet ocean island desert canyon meadow shadow thunder
lemon melon cherry grape peach onion carrot potato tomato pepper butter cheese honey sugar
salt coffee tiger zebra camel eagle falcon rabbit turtle whale shark dolphin spider
beetle mouse otter panda koala lion wolf bear goose duck swan crane heron finch robin
engine motor wheel gear lever spring cable wire screen mirror button pocket basket bucket
ladder hammer needle thread ribbon blanket pillow carpet curtain kettle spoon plate bottle
train plane boat truck bicycle ticket market school doctor farmer baker writer singer pilot
sailor dancer player teacher mother father sister brother friend number letter circle square
little bright quiet gentle simple happy sunny windy rainy snowy early later above below
""".split()

UNITS = [  # (name, plural, target, target plural, factor)
    ("kilometre", "kilometres", "metre", "metres", 1000),
    ("metre", "metres", "centimetre", "centimetres", 100),
    ("centimetre", "centimetres", "millimetre", "millimetres", 10),
    ("kilogram", "kilograms", "gram", "grams", 1000),
    ("litre", "litres", "millilitre", "millilitres", 1000),
    ("hour", "hours", "minute", "minutes", 60),
    ("minute", "minutes", "second", "seconds", 60),
    ("day", "days", "hour", "hours", 24),
    ("week", "weeks", "day", "days", 7),
]

# Facts about ZeRO and zerotui, each with a few ways of asking.
FACTS = [
    (["What does ZeRO stage 1 partition?", "Which state does ZeRO stage 1 split across GPUs?"],
     "ZeRO stage 1 partitions the optimizer states across the data-parallel GPUs."),
    (["What does ZeRO stage 2 partition?", "Which states does ZeRO stage 2 split across GPUs?"],
     "ZeRO stage 2 partitions the optimizer states and the gradients."),
    (["What does ZeRO stage 3 partition?", "Which states does ZeRO stage 3 split across GPUs?"],
     "ZeRO stage 3 partitions the optimizer states, the gradients and the weights."),
    (["Which ZeRO stage can offload parameters?", "Can I offload the weights with ZeRO stage 2?"],
     "Only ZeRO stage 3 can offload the parameters; stages 1 to 3 can offload the optimizer."),
    (["What does LoRA train?", "Which weights change with LoRA?"],
     "LoRA trains small low-rank adapters and keeps the base weights frozen."),
    (["Why use bf16 instead of fp16?", "What is the advantage of bf16?"],
     "bf16 has the range of fp32, so it needs no loss scaling."),
    (["What does a loss scale do?", "Why does fp16 training use a loss scale?"],
     "The loss scale multiplies the loss so small fp16 gradients do not underflow."),
    (["What does activation checkpointing do?", "What is gradient checkpointing?"],
     "It recomputes activations during the backward pass to save memory at about 30% more compute."),
    (["How is the global batch size computed?", "What is the train batch size in DeepSpeed?"],
     "The global batch is micro-batch times gradient accumulation times the number of GPUs."),
    (["How do I stop a zerotui run?", "Which command stops a run gracefully?"],
     "Run zerotui stop RUN; it writes a checkpoint and then ends the run."),
    (["How do I continue a stopped run?", "Which command resumes a run?"],
     "Run zerotui resume RUN; it continues from the newest complete checkpoint."),
    (["How do I turn a LoRA run into a full model?", "Which command merges a LoRA adapter?"],
     "Run zerotui merge RUN -o DIR to merge the adapter into the base model."),
    (["Where does zerotui write events?", "Which file holds the event stream of a run?"],
     "Each run appends its events to events.jsonl in the run folder."),
    (["What does zerotui estimate show?", "What is zerotui estimate for?"],
     "It shows the memory a plan needs on the GPU, in CPU RAM and on NVMe."),
    (["What does zerotui fit do?", "What is zerotui fit for?"],
     "It lists the plans that fit this machine, fastest first."),
    (["What does CPU offload cost?", "What is the price of offloading the optimizer to the CPU?"],
     "It saves GPU memory but moves data over PCIe and runs the optimizer step on the CPU."),
    (["What is NVMe offload?", "What does ZeRO-Infinity add?"],
     "NVMe offload keeps optimizer states or weights on a fast local disk."),
    (["What is gradient accumulation?", "Why accumulate gradients?"],
     "It adds the gradients of several micro-batches before one optimizer step."),
]


def _arith(rng: random.Random) -> dict:
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    op = rng.choice(["+", "-", "x"])
    if op == "-" and b > a:
        a, b = b, a
    c = a + b if op == "+" else a - b if op == "-" else a * b
    word = {"+": "plus", "-": "minus", "x": "times"}[op]
    question = rng.choice([f"What is {a} {word} {b}?", f"Compute {a} {op} {b}.", f"Calculate {a} {op} {b}."])
    return {"instruction": question, "input": "", "output": f"{a} {op} {b} = {c}."}


def _units(rng: random.Random) -> dict:
    name, plural, target, tplural, factor = rng.choice(UNITS)
    n = rng.randint(1, 12)
    src = name if n == 1 else plural
    question = rng.choice([f"Convert {n} {src} to {tplural}.", f"How many {tplural} are in {n} {src}?"])
    return {"instruction": question, "input": "", "output": f"{n} {src} is {n * factor} {tplural}."}


def _word_game(rng: random.Random) -> dict:
    w = rng.choice(WORDS)
    kind = rng.randrange(5)
    if kind == 0:
        return {"instruction": "Reverse the letters of this word.", "input": w, "output": w[::-1]}
    if kind == 1:
        return {"instruction": "Spell this word with dashes between the letters.", "input": w,
                "output": "-".join(w)}
    if kind == 2:
        return {"instruction": "Write this word in capital letters.", "input": w, "output": w.upper()}
    if kind == 3:
        return {"instruction": "How many letters are in this word?", "input": w,
                "output": f"The word {w} has {len(w)} letters."}
    return {"instruction": "What are the first and last letters of this word?", "input": w,
            "output": f"The first letter is {w[0]} and the last letter is {w[-1]}."}


def _compare(rng: random.Random) -> dict:
    a, b = rng.sample(range(1, 1000), 2)
    if rng.random() < 0.5:
        return {"instruction": f"Which is larger, {a} or {b}?", "input": "",
                "output": f"{max(a, b)} is larger than {min(a, b)}."}
    return {"instruction": f"What number comes after {a}?", "input": "", "output": f"{a + 1} comes after {a}."}


def _fact(rng: random.Random) -> dict:
    questions, answer = rng.choice(FACTS)
    return {"instruction": rng.choice(questions), "input": "", "output": answer}


def rows(n: int = 2400, seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    makers = [_arith, _units, _word_game, _compare, _fact]
    weights = [3, 2, 3, 1, 1]
    return [rng.choices(makers, weights)[0](rng) for _ in range(n)]


def main() -> None:
    with open(OUT, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows():
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
