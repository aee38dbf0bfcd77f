"""The pure parts of `chat` and `eval`: prompts asked the way training rendered them, held-out documents
split into prompt and answer (also out of packed sets), ROUGE-L as rouge-score computes it, and
settings refused before any model loads."""
from __future__ import annotations

import json

import pytest
from zerotui.core.data.prompts import Formatter
from zerotui.core.data.tokenise import TokeniseStats, from_examples, pack, tokenise
from zerotui.core.errors import RunError
from zerotui.core.infer.evaluate import (
    Generation,
    documents,
    prompt_and_answer,
    rouge_l,
)
from zerotui.core.infer.generate import Settings, prompt_ids
from zerotui.core.model.tiny import tiny_tokenizer
from zerotui.core.paths import SAMPLE_FILE
from zerotui.core.plan.schema import Plan


def rows(n=12):
    with open(SAMPLE_FILE, encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


def trained_on(tok, plan):
    """The sample rows as training tokenises them (alpaca, prompt masked)."""
    fmt = Formatter(tok, plan, "alpaca")
    encoded = tokenise([fmt.render(r) for r in rows()], tok, plan.seq_len, TokeniseStats())
    return from_examples(e for e in encoded if e is not None)


@pytest.mark.parametrize("template", [True, False], ids=["chat-template", "plain-layout"])
def test_the_prompt_is_what_training_put_before_the_answer(template):
    tok = tiny_tokenizer()
    if not template:
        tok.chat_template = None
    plan = Plan(model="tiny", data="sample")
    tokens = trained_on(tok, plan)
    for row, (ids, labels) in zip(rows(), documents(tokens)):
        prompt, answer = prompt_and_answer(ids, labels)
        text = row["instruction"] + (f"\n\n{row['input']}" if row["input"] else "")
        assert prompt_ids(tok, plan, [{"role": "user", "content": text}]) == prompt
        assert tok.decode(answer, skip_special_tokens=True).strip() == row["output"]


def test_packed_sets_split_back_into_their_documents():
    tok = tiny_tokenizer()
    plan = Plan(model="tiny", data="sample")
    plain = trained_on(tok, plan)
    packed = pack(plain, 256)
    assert len(packed) < len(plain)
    got = [prompt_and_answer(i, lab) for i, lab in documents(packed)]
    want = [prompt_and_answer(i, lab) for i, lab in documents(plain)]
    assert got == want


def test_text_rows_have_no_prompt_to_answer():
    ids = from_examples([([1, 5, 6, 7], [1, 5, 6, 7])])
    assert [prompt_and_answer(i, lab) for i, lab in documents(ids)] == [None]


def test_rouge_l_is_rouge_scores_mean_f_measure():
    from rouge_score import rouge_scorer

    gens = [Generation("p", "76 x 6 = 456.", "76 x 6 = 465."), Generation("p", "The word robin has 5 letters.",
                                                                          "robin has five letters"),
            Generation("p", "498 comes after 497.", "")]
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    each = [scorer.score(g.reference, g.generated)["rougeL"].fmeasure for g in gens]
    assert rouge_l(gens) == pytest.approx(sum(each) / 3) and 0 < rouge_l(gens) < 1
    assert rouge_l([Generation("p", "same words", "same words")]) == 1.0 and rouge_l([]) is None


@pytest.mark.parametrize("settings,words", [(Settings(max_new_tokens=0), "--max-new-tokens 0"),
                                            (Settings(temperature=-0.5), "--temperature -0.5")])
def test_impossible_settings_are_refused(settings, words):
    with pytest.raises(RunError, match=words):
        settings.check()
