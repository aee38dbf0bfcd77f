"""Prompts rendered the way training rendered them, and answers generated token by token.

A prompt goes through the tokenizer's chat template with the generation prompt when it has one, else
through the plain ``### Instruction: / ### Response:`` layout that ``core/data/prompts.py`` trained on,
so the model is asked in the form it learned. Text is streamed with transformers'
``TextIteratorStreamer``: ``generate`` runs in a thread and the pieces come back to the caller as they
are decoded.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zerotui.core.data.prompts import BadRow, Formatter
from zerotui.core.errors import RunError

OnText = Callable[[str], None]
#: Asked between tokens; True ends the answer there (a UI that closed, a user who pressed Escape).
Stop = Callable[[], bool]


@dataclass
class Settings:
    max_new_tokens: int = 128
    temperature: float = 0.0  # 0: greedy, the same answer every time
    seed: int = 0             # sampling only

    def check(self) -> None:
        if self.max_new_tokens < 1:
            raise RunError(f"--max-new-tokens {self.max_new_tokens} is not a positive number", "give 1 or more")
        if not (0.0 <= self.temperature <= 100.0):
            raise RunError(f"--temperature {self.temperature} is out of range", "give 0 (greedy) up to e.g. 2.0")


def prompt_ids(tokenizer: Any, plan: Any, messages: list[dict[str, str]]) -> list[int]:
    """The token ids that ask the model for the next assistant turn after ``messages``."""
    formatter = Formatter(tokenizer, plan, "chat")
    if formatter.has_template:
        try:
            text = formatter._apply(messages, add_generation_prompt=True)
        except BadRow as err:
            raise RunError(f"the model's chat template refused the conversation: {err}",
                           "start a new conversation, or pass one --prompt") from None
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    # Render with an empty answer and cut where the answer starts: the exact layout training used.
    rendered = formatter._plain([*messages, {"role": "assistant", "content": ""}])
    return list(tokenizer(rendered.text[: rendered.spans[-1][0]])["input_ids"])


def _kwargs(tokenizer: Any, settings: Settings) -> dict[str, Any]:
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    kw: dict[str, Any] = {"max_new_tokens": settings.max_new_tokens, "pad_token_id": pad,
                          "eos_token_id": tokenizer.eos_token_id}
    if settings.temperature > 0:
        kw.update(do_sample=True, temperature=settings.temperature, top_k=0, top_p=1.0)
    else:
        # Explicit: a model's generation_config.json may ask for sampling by default.
        kw.update(do_sample=False, temperature=None, top_k=None, top_p=None)
    return kw


def _stopping(stop: Stop) -> Any:
    from transformers import StoppingCriteria, StoppingCriteriaList

    class Asked(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
            return bool(stop())

    return StoppingCriteriaList([Asked()])


def generate_ids(model: Any, tokenizer: Any, ids: list[int], settings: Settings,
                 on_text: OnText | None = None, stop: Stop | None = None) -> list[int]:
    """The new token ids after ``ids``; ``on_text`` gets the decoded text piece by piece as it comes;
    ``stop`` ends the answer early when it returns True."""
    import torch
    from transformers import TextIteratorStreamer

    settings.check()
    device = next(model.parameters()).device
    inputs = torch.tensor([ids], dtype=torch.long, device=device)
    kw = _kwargs(tokenizer, settings)
    # Past its context window a model has no positions left (RoPE runs on, learned tables fail): an
    # answer ends there, whatever --max-new-tokens asked.
    window = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(window, int) and window > 0:
        if len(ids) >= window:
            raise RunError(f"the conversation is {len(ids):,} tokens and the model's context window "
                           f"{window:,}", "start a new conversation, or give a shorter prompt")
        kw["max_new_tokens"] = min(kw["max_new_tokens"], window - len(ids))
    if stop is not None:
        kw["stopping_criteria"] = _stopping(stop)
    if settings.temperature > 0:
        torch.manual_seed(settings.seed)
    if on_text is None:
        with torch.no_grad():
            out = model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs), **kw)
        return out[0, len(ids):].tolist()
    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    result: dict[str, Any] = {}
    # The caller's thread may be interrupted (Ctrl-C) while the model generates in its own: the answer is
    # then ended at the next token and the thread joined before the interrupt goes on, since an
    # interpreter that exits under a thread still inside torch aborts ("terminate called ...", rc 134).
    halted = threading.Event()
    asked = stop
    kw["stopping_criteria"] = _stopping(lambda: halted.is_set() or bool(asked and asked()))

    def work() -> None:
        try:
            with torch.no_grad():
                result["out"] = model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs),
                                               streamer=streamer, **kw)
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread below
            result["err"] = err
            streamer.on_finalized_text("", stream_end=True)  # else the loop below waits for ever

    thread = threading.Thread(target=work, name="zerotui-generate", daemon=True)
    thread.start()
    try:
        for piece in streamer:
            if piece:
                on_text(piece)
    except BaseException:
        halted.set()
        thread.join(timeout=30)
        raise
    thread.join()
    if "err" in result:
        raise result["err"]
    return result["out"][0, len(ids):].tolist()


def reply(model: Any, tokenizer: Any, plan: Any, messages: list[dict[str, str]], settings: Settings,
          on_text: OnText | None = None, stop: Stop | None = None) -> str:
    """The model's answer to ``messages`` (the last one the user's), decoded without special tokens."""
    new = generate_ids(model, tokenizer, prompt_ids(tokenizer, plan, messages), settings, on_text, stop)
    return tokenizer.decode(new, skip_special_tokens=True)
