"""The chat screen on a run the real engine trained (LoRA on the tiny model): opened with m from the runs
list and from a finished run's dashboard, its streamed answer is ``core.infer.generate.reply``'s greedy
answer on the same weights (final/ or the checkpoint picked); a run with no weights shows the message
`zerotui chat` prints; a live run's m says why not; a real `zerotui eval` result shows its perplexity
and ROUGE-L in the stat panel and the runs table."""
from __future__ import annotations

import os
import time

import pytest
from chat_shared import PROMPT, _env, cache, finished_run  # noqa: F401 (_env, cache: fixtures)
from dashboard_helpers import make_run as fixture_run
from dashboard_helpers import pilot_test, text_of, utc, wait_for  # noqa: F401 (utc: fixture)
from engine_runs import make_run
from textual.widgets import DataTable, Input, Select, Static
from zerotui.core.errors import RunError
from zerotui.core.events.stream import EventWriter
from zerotui.core.infer.generate import Settings, reply
from zerotui.core.infer.weights import load_run_model, weight_choices
from zerotui.core.run.folder import write_status
from zerotui.core.timefmt import format_number
from zerotui.tui.dashboard.chat_screen import ChatScreen
from zerotui.tui.dashboard.navigation import RunNavigation
from zerotui.tui.dashboard.runs import RunsScreen
from zerotui.tui.dashboard.screen import DashboardScreen
from zerotui.tui.dashboard.stat_panel import StatPanel
from zerotui.tui.messages import ChatText

NEW = 12


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory, cache):
    """One real finished run: final/ and a complete checkpoint at step 3. A small lr: at 1e-2 six steps
    taught the tiny model to answer with its end token at once, and an empty answer proves nothing."""
    return finished_run(tmp_path_factory.mktemp("runs") / "20260101-000000-lora", cache, method="lora", lr=1e-4,
                        max_steps=6, save_interval=3, log_interval=3, lora_targets=["q_proj", "v_proj"])


def expected_answer(paths, choice):
    rm = load_run_model(paths, choice, doing="chat with")
    return reply(rm.model, rm.tokenizer, rm.plan, [{"role": "user", "content": PROMPT}], Settings(NEW))


class Host(RunNavigation):
    def __init__(self, screen) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)


def transcript(screen) -> list[str]:
    return [text_of(w).strip() for w in screen.query(".chat-turn")]


async def ask(pilot, screen, prompt: str = PROMPT) -> None:
    await wait_for(pilot, lambda: screen.run_model is not None, timeout=120, what="the model loaded")
    screen.query_one("#chat-max-new", Input).value = str(NEW)
    screen.query_one("#chat-prompt", Input).focus()
    await pilot.press(*prompt)
    await pilot.press("enter")
    await wait_for(pilot, lambda: not screen.answering and len(screen.messages) == 2, timeout=120,
                   what="the answer")


@pilot_test
async def test_from_the_runs_list_the_answer_streams_and_is_the_models_own(lora_run):
    pieces: list[str] = []

    def hook(message):
        if isinstance(message, ChatText):
            pieces.append(message.text)

    app = Host(RunsScreen(lora_run.root.parent, refresh_s=0.5))
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await wait_for(pilot, lambda: len(app.screen.rows) == 1, what="the run listed")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen), what="the chat screen")
        chat = app.screen
        # The model loads in a worker as the screen opens ("loading model (…)…" until it is there; a
        # fast load may already be done here), and the status then names the weights it answers with.
        status = lambda: text_of(chat.query_one("#chat-status", Static))
        assert status().startswith(("loading model", "ready: final/"))
        await wait_for(pilot, lambda: status().startswith("ready: final/"), timeout=120, what="the weights named")
        await ask(pilot, chat)
        expected = expected_answer(lora_run, None)
        assert expected.strip()
        assert chat.messages[-1] == {"role": "assistant", "content": expected}
        said, answered = transcript(chat)
        assert said == f"you  {PROMPT}" and answered.startswith("model")
        assert " ".join(expected.split()) in " ".join(answered.split())
        assert pieces and "".join(pieces) == expected  # it came in pieces, as generated, and they add up to it
        assert "ready: final/" in text_of(chat.query_one("#chat-status", Static))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen), what="back to the runs list")


@pilot_test
async def test_from_the_dashboard_a_picked_checkpoint_answers_with_its_weights(lora_run):
    choices = weight_choices(lora_run)
    assert choices[0] == "final" and len(choices) >= 2
    app = Host(DashboardScreen(lora_run, live=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.history is not None, what="the history")
        await wait_for(pilot, lambda: app.screen.outcome == "completed", what="the finished state")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen), what="the chat screen")
        chat = app.screen
        await wait_for(pilot, lambda: chat.run_model is not None, timeout=120, what="final/ loaded")
        chat.query_one("#chat-weights", Select).value = choices[1]
        await wait_for(pilot, lambda: chat.run_model is not None and chat.run_model.source == choices[1],
                       timeout=120, what=f"{choices[1]} loaded")
        await ask(pilot, chat)
        assert chat.messages[-1]["content"] == expected_answer(lora_run, choices[1])
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen), what="back to the dashboard")


@pilot_test
async def test_a_run_without_weights_shows_what_zerotui_chat_says(tmp_path):
    paths = make_run(tmp_path / "runs" / "20260101-000000-empty", method="lora")
    write_status(paths, state="failed", step=0)
    with pytest.raises(RunError) as cli_says:  # what `zerotui chat` prints, from the same function
        load_run_model(paths, None, doing="chat with")
    app = Host(DashboardScreen(paths, live=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.history is not None, what="the history")
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen), what="the chat screen")
        chat = app.screen
        await wait_for(pilot, lambda: chat.loading is None, timeout=60, what="the load to end")
        shown = " ".join(text_of(chat.query_one("#chat-status", Static)).split())  # joined where it wrapped
        assert shown == cli_says.value.one_line()
        assert chat.query_one("#chat-weights", Select).disabled
        chat.query_one("#chat-prompt", Input).focus()
        await pilot.press("h", "i", "enter")
        assert "no model is loaded" in text_of(chat.query_one("#chat-status", Static))
        assert chat.messages == []


@pilot_test
async def test_on_a_live_run_the_key_says_why_not(tmp_path):
    # a live worker: this test's pid, beating now (run_state judges liveness by the real clock)
    paths = fixture_run(tmp_path, "live.jsonl", status={"state": "running", "pid": os.getpid(),
                                                         "pids": [os.getpid()], "heartbeat": time.time()})
    app = Host(DashboardScreen(paths, live=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.outcome == "running", what="the running state")
        await pilot.press("m")
        await pilot.pause(0.2)
        assert isinstance(app.screen, DashboardScreen)
        notes = [n.message for n in app._notifications]
        assert any("still training" in n and "--checkpoint latest" in n for n in notes), notes


@pilot_test
async def test_a_real_evals_perplexity_and_rouge_show_beside_the_loss(lora_run):
    from zerotui.core.infer.evaluate import eval_event, evaluate

    rm = load_run_model(lora_run, None, doing="evaluate")
    result = evaluate(rm, samples=2)
    with EventWriter(lora_run.events) as writer:  # as `zerotui eval` appends it
        event = writer.emit("eval", **eval_event(rm, result))
    assert event["perplexity"] is not None and event["rougeL"] is not None
    ppl = f"ppl {format_number(event['perplexity'])}"
    rouge = f"ROUGE-L {event['rougeL']:.3f}"

    app = Host(DashboardScreen(lora_run, live=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.history is not None, what="the history")
        await pilot.pause(0.2)
        panel = text_of(app.screen.query_one(StatPanel))
        assert ppl in panel and rouge in panel, panel
    app = Host(RunsScreen(lora_run.root.parent, refresh_s=0.5))
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_for(pilot, lambda: len(app.screen.rows) == 1, what="the run listed")
        row = [str(c) for c in app.screen.query_one(DataTable).get_row_at(0)]
        assert ppl in row[4] and rouge in row[4], row
