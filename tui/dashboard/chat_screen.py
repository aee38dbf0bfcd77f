"""Talk to a finished run's model: a prompt, the conversation, the answer streamed as it is generated.

The same model and answers as `zerotui chat RUN` (``core.infer``): ``final/`` or a complete checkpoint
(the picker; newest first, ``final/`` the default), greedy unless a temperature is set. Loading (seconds
to minutes) and generating run in thread workers; the answer comes to the UI piece by piece as
``ChatText`` messages, so the screen never waits on the model. Escape stops an answer being written,
and leaves the screen; a new pick in the picker loads those weights and the conversation goes on.

Only for runs that are over: the openers ask ``core.infer.weights.chat_refusal``, which says why not
for one still training.
"""
from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Input, Label, Select, Static
from textual.worker import get_current_worker
from zerotui.core.errors import RunError, ZeroTuiError
from zerotui.core.run.folder import RunPaths
from zerotui.tui.common.footer import FitFooter
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.messages import ChatModelLoaded, ChatReplied, ChatText

DEFAULT_MAX_NEW = 128


def _failure(err: BaseException, doing: str) -> str:
    """One line for any failure of the model code: ours say what to do; anything else names itself."""
    if isinstance(err, ZeroTuiError):
        return in_tui_words(err.one_line())
    first = (str(err).splitlines() or [""])[0][:200]
    return f"{doing} failed: {type(err).__name__}: {first}"


class ChatScreen(Screen):
    DEFAULT_CSS = """
    ChatScreen { layout: vertical; }
    ChatScreen #chat-title { height: 1; padding: 0 1; background: $panel; }
    ChatScreen #chat-settings { height: 3; padding: 0 1; }
    ChatScreen #chat-settings Label { padding: 1 1 0 0; color: $text-muted; }
    ChatScreen #chat-weights { width: 24; }
    ChatScreen #chat-temperature { width: 10; }
    ChatScreen #chat-max-new { width: 10; }
    ChatScreen #chat-transcript { height: 1fr; padding: 0 1; border: round $panel; }
    ChatScreen .chat-turn { margin: 0 0 1 0; }
    ChatScreen #chat-status { height: auto; padding: 0 1; color: $text-muted; }
    ChatScreen #chat-prompt { margin: 0 1; }
    """
    HELP_TITLE = "Chat"
    HELP_INTRO = """\
Talk to the run's model as `zerotui chat RUN` does: type a prompt and press Enter; the answer appears \
as it is generated. The picker chooses the weights (final/ or a complete checkpoint); temperature 0 is \
greedy (the same answer every time)."""
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="stop the answer being written, or leave the chat"),
        Binding("ctrl+n", "new_chat", "New chat", tooltip="forget the conversation (the model stays loaded)"),
    ]

    def __init__(self, paths: RunPaths) -> None:
        super().__init__()
        self.paths = RunPaths(getattr(paths, "root", paths))
        self.run_model: Any = None      # core.infer.weights.RunModel once loaded
        self.loading: str | None = None  # the pick being loaded ("" : the default)
        self.messages: list[dict[str, str]] = []
        self.turn = 0
        self.answering = False
        self._stop = False              # asked between tokens by the generating thread
        self._answer: Static | None = None
        self._answer_text = ""
        self._first: str | None = None   # the picker's first value: what the default load brings

    def compose(self) -> ComposeResult:
        from zerotui.core.infer.weights import weight_choices

        choices = weight_choices(self.paths)
        self._first = choices[0] if choices else None
        yield Static(Text.assemble(("Chat", "bold"), ("  with ", "dim"), self.paths.name), id="chat-title")
        with Horizontal(id="chat-settings"):
            yield Label("weights")
            yield Select([(c if c != "final" else "final/", c) for c in choices], id="chat-weights",
                         allow_blank=not choices, value=choices[0] if choices else Select.NULL,
                         prompt="none", disabled=not choices)
            yield Label("temperature")
            yield Input("0", id="chat-temperature", type="number")
            yield Label("max new tokens")
            yield Input(str(DEFAULT_MAX_NEW), id="chat-max-new", type="integer")
        yield VerticalScroll(id="chat-transcript")
        yield Static(id="chat-status")
        yield Input(placeholder="a prompt for the model; Enter sends it", id="chat-prompt")
        yield FitFooter()

    def on_mount(self) -> None:
        self.query_one("#chat-prompt", Input).focus()
        self._load(None)

    # -- the model --------------------------------------------------------------------------------
    def _status(self, text: str, style: str = "") -> None:
        self.query_one("#chat-status", Static).update(Text(text, style=style))

    def _load(self, choice: str | None) -> None:
        self.loading = choice or ""
        what = "final/" if choice == "final" else choice or "the run's newest weights"
        self._status(f"loading model ({what})…", "yellow")
        self.load_model(choice)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chat-load", description="load the run's model")
    def load_model(self, choice: str | None) -> None:
        from zerotui.core.infer.weights import load_run_model

        try:
            rm = load_run_model(self.paths, choice, doing="chat with")
        except Exception as err:  # noqa: BLE001 - shown on the screen in one line, never a traceback
            self.post_message(ChatModelLoaded(choice or "", error=_failure(err, "loading the model")))
            return
        self.post_message(ChatModelLoaded(choice or "", rm))

    def on_chat_model_loaded(self, message: ChatModelLoaded) -> None:
        message.stop()
        if message.choice != self.loading:  # an older pick, overtaken by a newer one
            return
        self.loading = None
        if message.error:
            self.run_model = None
            self._status(message.error, "red")
            return
        rm = self.run_model = message.run_model
        step = f", step {rm.step}" if rm.step is not None else ""
        skipped = f"; passed over {'; '.join(rm.skipped)}" if rm.skipped else ""
        self._status(f"ready: {'final/' if rm.source == 'final' else rm.source}{step}{skipped}",
                     "yellow" if skipped else "green")
        picker = self.query_one("#chat-weights", Select)
        if picker.value != rm.source:  # the default pick passed over a damaged checkpoint
            with picker.prevent(Select.Changed):
                picker.value = rm.source

    @on(Select.Changed, "#chat-weights")
    def _pick(self, event: Select.Changed) -> None:
        if event.value is Select.NULL or (self.run_model is not None and event.value == self.run_model.source
                                           and self.loading is None):
            return
        if self.loading == "" and event.value == self._first:  # the picker's own first value, being loaded
            return
        self._stop = self.answering
        self.run_model = None  # the old weights' memory goes before the new ones load
        self._load(str(event.value))

    # -- a turn -----------------------------------------------------------------------------------
    def settings(self) -> Any:
        """The answer's settings from the two fields; RunError names the field that is wrong."""
        from zerotui.core.infer.generate import Settings

        temp, most = (self.query_one(f"#{i}", Input).value.strip() for i in ("chat-temperature", "chat-max-new"))
        try:
            settings = Settings(max_new_tokens=int(most), temperature=float(temp))
        except ValueError:
            raise RunError(f"temperature {temp!r} / max new tokens {most!r} is not a number",
                           "give a temperature of 0 (greedy) up to e.g. 2.0, and 1 or more tokens") from None
        try:
            settings.check()
        except RunError as err:
            raise RunError(err.message.replace("--max-new-tokens", "max new tokens")
                           .replace("--temperature", "temperature"), err.hint) from None
        return settings

    @on(Input.Submitted, "#chat-prompt")
    def _send(self, event: Input.Submitted) -> None:
        prompt = event.value.strip()
        if not prompt:
            return
        if self.answering:
            self._status("an answer is still being written: wait for it, or Escape stops it", "yellow")
            return
        if self.run_model is None:
            self._status("the model is still loading: send the prompt once it is ready" if self.loading is not None
                         else "no model is loaded: pick weights above", "yellow")
            return
        try:
            settings = self.settings()
        except RunError as err:
            self._status(err.one_line(), "red")
            return
        event.input.value = ""
        self.messages.append({"role": "user", "content": prompt})
        transcript = self.query_one("#chat-transcript", VerticalScroll)
        transcript.mount(Static(Text.assemble(("you  ", "bold cyan"), prompt), classes="chat-turn"))
        self._answer = Static(Text("model  ", style="bold green"), classes="chat-turn")
        self._answer_text = ""
        transcript.mount(self._answer)
        transcript.scroll_end(animate=False)
        self.turn += 1
        self.answering, self._stop = True, False
        greedy = "greedy" if settings.temperature == 0 else f"temperature {settings.temperature:g}"
        self._status(f"answering ({greedy}, up to {settings.max_new_tokens} tokens)…", "yellow")
        self.answer(self.turn, self.run_model, list(self.messages), settings)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chat-reply", description="generate an answer")
    def answer(self, turn: int, rm: Any, messages: list[dict[str, str]], settings: Any) -> None:
        from zerotui.core.infer.generate import reply

        worker = get_current_worker()

        def stop() -> bool:
            return self._stop or worker.is_cancelled

        try:
            text = reply(rm.model, rm.tokenizer, rm.plan, messages, settings,
                         on_text=lambda piece: self.post_message(ChatText(turn, piece)), stop=stop)
        except Exception as err:  # noqa: BLE001 - shown on the screen in one line, never a traceback
            self.post_message(ChatReplied(turn, error=_failure(err, "generating the answer")))
            return
        self.post_message(ChatReplied(turn, text, stopped=stop()))

    def on_chat_text(self, message: ChatText) -> None:
        message.stop()
        if message.turn != self.turn or self._answer is None:
            return
        self._answer_text += message.text
        self._answer.update(Text.assemble(("model  ", "bold green"), self._answer_text))
        self.query_one("#chat-transcript", VerticalScroll).scroll_end(animate=False)

    def on_chat_replied(self, message: ChatReplied) -> None:
        message.stop()
        if message.turn != self.turn:
            return
        self.answering = False
        if message.error:
            self.messages.pop()  # the question stays on screen; the model was never told it
            if self._answer is not None:
                self._answer.update(Text.assemble(("model  ", "bold green"), (message.error, "red")))
            self._status(message.error, "red")
            return
        # The answer as the tokenizer decodes it whole: what the conversation continues from.
        self.messages.append({"role": "assistant", "content": message.text})
        if self._answer is not None:
            self._answer_text = message.text
            self._answer.update(Text.assemble(("model  ", "bold green"), message.text,
                                              (" (stopped)", "dim") if message.stopped else ""))
        rm = self.run_model
        self._status(f"ready: {'final/' if rm.source == 'final' else rm.source}" if rm is not None else "",
                     "green")

    # -- keys -------------------------------------------------------------------------------------
    def action_back(self) -> None:
        if self.answering:
            self._stop = True  # the thread ends at its next token; its reply says "(stopped)"
            return
        self._stop = True
        self.app.pop_screen()

    def action_new_chat(self) -> None:
        self._stop = self.answering
        self.turn += 1  # pieces still coming for the old turn are dropped
        self.answering = False
        self.messages.clear()
        self._answer = None
        self.query_one("#chat-transcript", VerticalScroll).remove_children()
