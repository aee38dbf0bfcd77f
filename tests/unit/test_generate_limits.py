"""Generation's limits on a real (tiny) model: an answer ends at the model's context window whatever
--max-new-tokens asked, a conversation already past it is refused in words, and an interrupt in the
caller's thread ends the generating thread before it goes on (an interpreter that exits under a thread
still inside torch aborts)."""
from __future__ import annotations

import threading

import pytest
import torch
from transformers import AutoModelForCausalLM

from zerotui.core.errors import RunError
from zerotui.core.infer.generate import Settings, generate_ids
from zerotui.core.model.tiny import materialise, tiny_tokenizer


@pytest.fixture(scope="module")
def model():
    m = AutoModelForCausalLM.from_pretrained(str(materialise(42)), dtype=torch.float32).eval()
    m.config.max_position_embeddings = 48  # a short window: the limit is reached in a moment
    m.generation_config.eos_token_id = None  # no early end: the answer runs to its limit
    return m


class NoEos:
    """The tiny tokenizer without an end-of-sequence token, so only the limit ends an answer."""

    def __init__(self, tok):
        self._tok = tok
        self.eos_token_id = None
        self.pad_token_id = tok.pad_token_id

    def __getattr__(self, name):
        return getattr(self._tok, name)


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_an_answer_ends_at_the_context_window(model, streamed):
    ids = list(range(5, 15))  # 10 prompt tokens
    pieces: list[str] = []
    out = generate_ids(model, NoEos(tiny_tokenizer()), ids, Settings(max_new_tokens=1000),
                       on_text=pieces.append if streamed else None)
    assert len(out) == 48 - len(ids)


def test_a_conversation_past_the_window_is_refused(model):
    with pytest.raises(RunError) as err:
        generate_ids(model, tiny_tokenizer(), list(range(5, 5 + 48)), Settings(max_new_tokens=4))
    assert "48 tokens and the model's context window 48" in err.value.message
    assert "start a new conversation" in err.value.hint


def test_an_interrupt_while_streaming_ends_the_generating_thread_first(model):
    seen = []

    def on_text(piece):
        seen.append(piece)
        raise KeyboardInterrupt  # Ctrl-C while the first piece is printed

    with pytest.raises(KeyboardInterrupt):
        generate_ids(model, NoEos(tiny_tokenizer()), list(range(5, 15)), Settings(max_new_tokens=2000),
                     on_text=on_text)
    assert seen
    assert not [t for t in threading.enumerate() if t.name == "zerotui-generate"]
