"""Turning one data row into the text the model sees, and the character ranges it learns to produce.

Formats (the Plan's ``data_format``):

- ``text``: the whole text is trained on.
- ``alpaca``: ``instruction`` (+ optional ``input``, ``system``) → ``output``.
- ``prompt_response``: ``prompt_field`` → ``response_field``.
- ``chat``: a list of ``{"role", "content"}`` messages (ShareGPT's ``{"from", "value"}`` is accepted);
  every assistant turn is trained on, everything else is context.

Instruction and chat data go through the tokenizer's chat template when it has one (what the model will
see at inference time). Without one, a plain ``### Instruction: / ### Response:`` layout is used. Only
the answer spans are trained on: the prompt's tokens get label -100 (``core/data/tokenise.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from zerotui.core.errors import DataError

#: How many rows ``auto`` looks at to decide the format.
DETECT_ROWS = 20
ROLE_ALIASES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                "model": "assistant", "bot": "assistant", "system": "system"}


class BadRow(Exception):
    """One row that cannot be used; the message says why (it is counted, not fatal)."""


@dataclass
class Rendered:
    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)  # character ranges trained on
    train_all: bool = False           # text format: every token is a target
    add_special_tokens: bool = True   # False when the chat template already wrote BOS


def detect_format(rows: list[Any], plan: Any, source: str) -> str:
    """The format of ``rows``: the plan's choice, or for ``auto`` the one the first rows fit."""
    if plan.data_format != "auto":
        return plan.data_format
    sample = [r for r in rows[:DETECT_ROWS] if isinstance(r, dict)]
    if not sample:
        if rows and all(isinstance(r, str) for r in rows[:DETECT_ROWS]):
            return "text"
        arrays = bool(rows) and all(isinstance(r, list) for r in rows[:DETECT_ROWS])
        raise DataError(f"{source}: the first rows are not objects with named fields"
                        + (" (each is a JSON array)" if arrays else ""),
                        ("a JSON array of objects belongs in a .json file, not .jsonl (one object a line); "
                         if arrays and str(source).endswith(".jsonl") else "")
                        + "rows need fields such as instruction/output, messages, prompt/response or text")
    keys = set().union(*(r.keys() for r in sample))
    if plan.messages_field in keys or "conversations" in keys:
        return "chat"
    if "instruction" in keys and "output" in keys:
        return "alpaca"
    if plan.prompt_field in keys and plan.response_field in keys:
        return "prompt_response"
    if plan.text_field in keys:
        return "text"
    shown = ", ".join(sorted(map(str, keys))[:8])
    # csv.DictReader takes the first line as the header whatever it holds: say so, it is the usual cause.
    header = "; a .csv file's first line must name the columns" if str(source).lower().endswith(".csv") else ""
    raise DataError(
        f"{source}: cannot tell the format from the fields ({shown}){header}",
        f"use fields instruction/input/output, {plan.messages_field}, {plan.prompt_field}/"
        f"{plan.response_field} or {plan.text_field}, or set --data-format and the --*-field names")


class Formatter:
    """Renders rows of one format with one tokenizer."""

    def __init__(self, tokenizer: Any, plan: Any, fmt: str) -> None:
        self.tok = tokenizer
        self.plan = plan
        self.fmt = fmt
        # tokenizer may be None: check_row() validates rows before any tokenizer is loaded.
        self.eos = getattr(tokenizer, "eos_token", None) or ""
        self.has_template = bool(getattr(tokenizer, "chat_template", None))

    def render(self, row: Any) -> Rendered:
        if self.fmt == "text":
            return self._text(row)
        messages = self.messages(row)
        if self.has_template:
            return self._templated(messages)
        return self._plain(messages)

    # -- rows to messages -------------------------------------------------------------------------
    def messages(self, row: Any) -> list[dict[str, str]]:
        if not isinstance(row, dict):
            raise BadRow(f"expected an object, got {type(row).__name__}")
        if self.fmt == "chat":
            return self._chat_messages(row)
        if self.fmt == "alpaca":
            prompt = _text_field(row, "instruction")
            extra = row.get("input")
            if extra not in (None, ""):
                if not isinstance(extra, str):
                    raise BadRow(f"'input' is not text ({json_kind(extra)})")
                prompt = f"{prompt}\n\n{extra}"
            answer = _text_field(row, "output")
        else:  # prompt_response
            prompt = _text_field(row, self.plan.prompt_field)
            answer = _text_field(row, self.plan.response_field)
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
        system = row.get("system")
        if isinstance(system, str) and system.strip():
            messages.insert(0, {"role": "system", "content": system})
        return messages

    def _chat_messages(self, row: dict) -> list[dict[str, str]]:
        name = self.plan.messages_field
        if row.get(name) is None and row.get("conversations") is not None:
            name = "conversations"  # ShareGPT's field
        raw = row.get(name)
        if not isinstance(raw, list) or not raw:
            why = "missing" if name not in row else json_kind(raw) if not isinstance(raw, list) else "an empty list"
            raise BadRow(f"'{name}' is not a non-empty list of messages (it is {why})")
        out = []
        for i, m in enumerate(raw):
            if not isinstance(m, dict):
                raise BadRow(f"message {i + 1} is not an object")
            role = m.get("role", m.get("from"))
            content = m.get("content", m.get("value"))
            role = ROLE_ALIASES.get(str(role).lower()) if role is not None else None
            if role is None:
                raise BadRow(f"message {i + 1} has no known role (user, assistant, system)")
            if not isinstance(content, str):
                key = "content" if "content" in m else "value" if "value" in m else ""
                raise BadRow(f"message {i + 1} has no text content" + (
                    f" ('{key}' is {json_kind(content)})" if key else " (no 'content')"))
            out.append({"role": role, "content": content})
        if not any(m["role"] == "assistant" and m["content"].strip() for m in out):
            raise BadRow("no assistant message to learn from")
        return out

    # -- renderings -------------------------------------------------------------------------------
    def _text(self, row: Any) -> Rendered:
        text = row if isinstance(row, str) else _text_field(row, self.plan.text_field) if isinstance(row, dict) \
            else None
        if text is None:
            raise BadRow(f"expected an object with '{self.plan.text_field}'")
        return Rendered(text + self.eos, train_all=True)

    def _templated(self, messages: list[dict[str, str]]) -> Rendered:
        """Render through the chat template; each assistant turn's span is found by rendering prefixes.

        A turn's span runs from the end of "everything before it + the generation prompt" to the end of
        "everything up to and including it". Templates that rewrite earlier turns (some strip reasoning
        from past answers) break that prefix property for those turns: they are kept as context only.
        """
        apply = self._apply
        full = apply(messages, add_generation_prompt=False)
        spans = []
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            start_text = apply(messages[:i], add_generation_prompt=True) if i else ""
            end_text = apply(messages[: i + 1], add_generation_prompt=False)
            if full.startswith(end_text) and end_text.startswith(start_text) and len(end_text) > len(start_text):
                spans.append((len(start_text), len(end_text)))
        if not spans:
            raise BadRow("the chat template hides where the assistant's answer is")
        # Templates write BOS themselves when the model wants one.
        return Rendered(full, spans, add_special_tokens=False)

    def _apply(self, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
        if not messages:
            return ""
        try:
            return self.tok.apply_chat_template(messages, tokenize=False,
                                                add_generation_prompt=add_generation_prompt)
        except Exception as err:  # jinja raises TemplateError for e.g. "roles must alternate"
            raise BadRow(f"the chat template refused it ({str(err).splitlines()[0][:120]})") from None

    def _plain(self, messages: list[dict[str, str]]) -> Rendered:
        """No chat template: Alpaca's layout for one exchange, ``### User/Assistant`` turns otherwise."""
        single = [m["role"] for m in messages if m["role"] != "system"] == ["user", "assistant"]
        head = {"system": "### System:\n", "user": "### Instruction:\n" if single else "### User:\n",
                "assistant": "### Response:\n" if single else "### Assistant:\n"}
        parts, spans, pos = [], [], 0
        for m in messages:
            prefix = head[m["role"]]
            parts.append(prefix)
            pos += len(prefix)
            body = m["content"] + (self.eos if m["role"] == "assistant" else "")
            if m["role"] == "assistant":
                spans.append((pos, pos + len(body)))
            parts.append(body + "\n\n")
            pos += len(body) + 2
        return Rendered("".join(parts).rstrip("\n"), spans)


def check_row(row: Any, plan: Any, fmt: str) -> None:
    """Raise BadRow when ``row`` has nothing to train on in format ``fmt``. Needs no tokenizer, so a
    launch can refuse a file with no usable row in a second instead of failing in the worker."""
    Formatter(None, plan, fmt).render(row)


def expected_fields(fmt: str, plan: Any) -> str:
    """What a row of ``fmt`` needs, in words (the hint of a 'no usable rows' error)."""
    from zerotui.core.data.files import FORMATS_HINT

    return {
        "alpaca": "alpaca rows need non-empty 'instruction' and 'output' text ('input' optional)",
        "chat": f"chat rows need '{plan.messages_field}': a list of {{role, content}} with an assistant turn",
        "prompt_response": f"rows need non-empty '{plan.prompt_field}' and '{plan.response_field}' text",
        "text": f"text rows need a non-empty '{plan.text_field}' field",
    }.get(fmt, FORMATS_HINT)


def _text_field(row: dict, name: str) -> str:
    # Missing, null and the wrong type are three different mistakes in a file (a dropped column, an
    # export that wrote None, a number or a list where text belongs): each is named as what it is.
    if name not in row:
        raise BadRow(f"missing '{name}'")
    value = row[name]
    if value is None:
        raise BadRow(f"'{name}' is null")
    if not isinstance(value, str):
        raise BadRow(f"'{name}' is not text ({json_kind(value)})")
    if not value.strip():
        raise BadRow(f"'{name}' is empty")
    return value


def json_kind(value: Any) -> str:
    """What a parsed value is, in the words of the file it came from ("a number", "a list")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}, a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "text"
    return f"a {type(value).__name__}"


def template_source(tokenizer: Any) -> Optional[str]:
    """The chat template text (part of the tokenised-data cache key)."""
    t = getattr(tokenizer, "chat_template", None)
    return t if isinstance(t, str) else (str(t) if t else None)
