"""``zerotui eval``: a finished run's model scored on the held-out split it was trained beside.

- Perplexity: ``exp`` of the mean loss per target token over the whole eval split, computed as the
  training loop's evaluation does (each micro-batch's mean loss weighted by its target tokens, so the
  sum is the split's total negative log-likelihood).
- ROUGE-L (Lin 2004; the maintained ``rouge-score`` package, F-measure): for prompt/response data, the
  greedy answer to each of the first ``samples`` held-out prompts against the answer in the data. Text
  data has no prompt to answer, so it gets perplexity alone.

The split is the plan's own (``core/data/prepare.py``: same file, tokenizer, seed and fraction), so these
are the rows the run never trained on. The result is appended to the run's events.jsonl as an ``eval``
event (``loss``, ``perplexity``, ``rougeL``, ``samples``, ``source``), beside the loop's own evals.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zerotui.core.errors import RunError

# torch (through data.tokenise) only inside the functions: `zerotui --help` and the completion script
# import this module for DEFAULT_SAMPLES, and must not pay seconds of torch start-up for it.
from zerotui.core.infer.generate import Settings, generate_ids

#: Held-out prompts answered for ROUGE-L by default: generation is the slow part (one token at a time).
DEFAULT_SAMPLES = 50
#: Longest answer generated per prompt; the reference's length decides below this.
MAX_ANSWER_TOKENS = 256

#: Told how far an evaluation is: (stage, done, total), with done 0 as a stage begins (total 0: a stage
#: without a count, ``DATA_STAGE``). ``LOSS_STAGE`` counts the held-out split's micro-batches and
#: ``ANSWER_STAGE`` the prompts answered for ROUGE-L; on a CPU either can take minutes, and a command
#: that says nothing meanwhile looks hung.
Progress = Callable[[str, int, int], None]
DATA_STAGE = "reading the held-out split"
LOSS_STAGE = "held-out loss"
ANSWER_STAGE = "answering prompts"


@dataclass
class Generation:
    prompt: str
    reference: str
    generated: str


@dataclass
class EvalResult:
    loss: float
    perplexity: float | None
    tokens: int                       # target tokens the loss is over
    rouge_l: float | None = None   # None for text data or with samples=0
    generations: list[Generation] = field(default_factory=list)


def held_out(run_model: Any) -> Any:
    """The plan's tokenised data with its eval split; RunError when the plan kept none back."""
    from zerotui.core.data.prepare import prepare_data

    data = prepare_data(run_model.plan, run_model.tokenizer)
    if data.eval is None or len(data.eval) == 0:
        raise RunError(f"the plan holds no rows back for evaluation (eval_fraction {run_model.plan.eval_fraction})",
                       "train with --eval-fraction above 0 (e.g. 0.05) to have a held-out split")
    return data


def heldout_loss(model: Any, data: Any, micro_batch: int,
                 progress: Progress | None = None) -> tuple[float, int]:
    """(mean loss per target token, target tokens) over the whole eval split."""
    import torch
    from zerotui.core.data.tokenise import IGNORE

    ev = data.eval
    device = next(model.parameters()).device
    nll, n = 0.0, 0
    batches = -(-len(ev) // micro_batch)
    if progress:
        progress(LOSS_STAGE, 0, batches)
    with torch.no_grad():
        for done, start in enumerate(range(0, len(ev), micro_batch), 1):
            batch = data.batch(ev, list(range(start, min(start + micro_batch, len(ev)))))
            batch.pop("token_count", None)
            targets = int((batch["labels"][:, 1:] != IGNORE).sum())
            if targets:
                batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
                nll += float(model(**batch).loss.float()) * targets
                n += targets
            if progress:
                progress(LOSS_STAGE, done, batches)
    return (nll / n if n else float("nan")), n


def documents(tokens: Any) -> list[tuple[Any, Any]]:
    """Every (ids, labels) document of a token set: packed sequences split back at their boundaries."""
    if not tokens.packed:
        return [tokens.example(i) for i in range(len(tokens))]
    bounds = tokens.doc_offsets.tolist()
    return [(tokens.ids[a:b], tokens.labels[a:b]) for a, b in itertools.pairwise(bounds)]


def prompt_and_answer(ids: Any, labels: Any) -> tuple[list[int], list[int]] | None:
    """The context before the first trained span and that span (the first answer); None when the
    document has no context (text data: every token is a target)."""
    from zerotui.core.data.tokenise import IGNORE

    target = (labels != IGNORE).nonzero().flatten().tolist()
    if not target or target[0] == 0:
        return None
    first = target[0]
    end = first
    while end < len(labels) and int(labels[end]) != IGNORE:
        end += 1
    return ids[:first].tolist(), ids[first:end].tolist()


def rouge_pairs(run_model: Any, data: Any, samples: int,
                progress: Progress | None = None) -> list[Generation]:
    """Greedy answers to the first ``samples`` held-out prompts, beside their references."""
    tok = run_model.tokenizer
    pairs = [p for p in (prompt_and_answer(i, lab) for i, lab in documents(data.eval)) if p is not None]
    pairs = pairs[:samples]
    out = []
    if progress:
        progress(ANSWER_STAGE, 0, len(pairs))
    for k, (prompt, answer) in enumerate(pairs):
        budget = max(1, min(MAX_ANSWER_TOKENS, 2 * len(answer) + 8, data.seq_len))
        new = generate_ids(run_model.model, tok, prompt, Settings(max_new_tokens=budget))
        out.append(Generation(tok.decode(prompt, skip_special_tokens=False),
                              tok.decode(answer, skip_special_tokens=True).strip(),
                              tok.decode(new, skip_special_tokens=True).strip()))
        if progress:
            progress(ANSWER_STAGE, k + 1, len(pairs))
    return out


def rouge_l(generations: list[Generation]) -> float | None:
    """Mean ROUGE-L F-measure of the generated answers against the references (None without any)."""
    if not generations:
        return None
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    scores = [scorer.score(g.reference, g.generated)["rougeL"].fmeasure for g in generations]
    return sum(scores) / len(scores)


def evaluate(run_model: Any, samples: int = DEFAULT_SAMPLES, progress: Progress | None = None) -> EvalResult:
    """Perplexity over the held-out split, and ROUGE-L of ``samples`` answers; ``progress`` hears each
    micro-batch and each answer (``Progress``)."""
    if samples < 0:
        raise RunError(f"--samples {samples} is negative", "give 0 (perplexity only) or more")
    if progress:
        progress(DATA_STAGE, 0, 0)  # tokenising a large file (its cache aside) takes a while
    data = held_out(run_model)
    loss, tokens = heldout_loss(run_model.model, data, max(1, int(run_model.plan.micro_batch)), progress)
    ppl = math.exp(loss) if math.isfinite(loss) and loss < 700 else None  # exp overflows past ~709
    result = EvalResult(loss, ppl, tokens)
    if samples and data.report.format != "text":
        result.generations = rouge_pairs(run_model, data, samples, progress)
        result.rouge_l = rouge_l(result.generations)
    return result


def eval_event(run_model: Any, result: EvalResult) -> dict[str, Any]:
    """The fields of the ``eval`` event this evaluation appends (DESIGN's event contract, extended)."""
    return {"step": run_model.step, "loss": result.loss, "perplexity": result.perplexity,
            "rougeL": result.rouge_l, "samples": len(result.generations), "tokens": result.tokens,
            "source": run_model.source, "by": "zerotui eval"}
