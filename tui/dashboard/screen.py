"""The dashboard: one run's charts, numbers, log and controls, live or finished.

Data flow (docs/architecture.md, "The dashboard"):

* one thread worker reads the whole ``events.jsonl`` into a ``RunHistory`` (``core.events.history``) and hands
  it over in a ``HistoryLoaded`` message; it then follows the file and posts ``EventsArrived`` batches
  (every poll's new lines in one message) and ``RunStateChanged`` from ``status.json``;
* the UI thread owns the history from then on: it applies each batch (bounded, vectorised) and marks
  the charts whose series changed;
* a timer redraws stale, visible charts from their downsampled series, within a time budget per tick,
  so neither a fast run nor a 32-hour history can make the UI lag.

Control keys append to ``control.jsonl`` (``core.run.folder.send_control``); the worker's ``control_ack``
event shows up in the log and as a notification. Detach quits the UI; the run goes on, and the terminal
says how to come back to it (``controls.RunControls.detach_note``).
"""
from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Callable, Optional

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal
from textual.screen import Screen
from textual.widgets import Tab, Tabs
from textual.worker import Worker, WorkerState, get_current_worker

from zerotui.core.events.columns import parse_events
from zerotui.core.events.history import ALERT_GROUP, Changes, RunHistory
from zerotui.core.events.reader import EventFollower, load_history
from zerotui.core.run.folder import RunPaths, read_status, run_state
from zerotui.tui.common.desktop import desktop_notify
from zerotui.tui.common.footer import FitFooter
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.messages import (EventsArrived, HistoryLoaded, OpenChat, RunResumeDone, RunStateChanged,
                                  ShowRuns)
from zerotui.tui.dashboard.controls import LIVE_STATES, RunControls
from zerotui.tui.dashboard.css import DASHBOARD_CSS
from zerotui.tui.dashboard.charts import ZOOMS, SeriesChart
from zerotui.tui.dashboard.gpu_chart import GpuMemoryChart, GpuUtilChart
from zerotui.tui.dashboard.host_chart import HostChart
from zerotui.tui.dashboard.loss_chart import LossChart, LossScaleChart
from zerotui.tui.dashboard.phase_panel import PhasePanel
from zerotui.tui.dashboard.run_header import HeaderFacts, RunHeader
from zerotui.tui.dashboard.run_log import RunLog
from zerotui.tui.dashboard.speed_chart import ThroughputChart
from zerotui.tui.dashboard.stat_panel import StatPanel

#: Panes in tab order (narrow terminals show one at a time): tab id -> widget id.
PANES = (("loss", "Loss"), ("scale", "Scale"), ("gpu", "GPU"), ("speed", "Speed"), ("host", "Host"),
         ("stats", "Stats"), ("log", "Log"))
#: Which panes each history change group redraws.
GROUP_CHARTS = {"loss": ("chart-loss",), "scale": ("chart-scale",), "gpu": ("chart-gpu-util", "chart-gpu-mem"),
                "speed": ("chart-speed",), "host": ("chart-host",)}
#: The grid layout needs this much room; smaller terminals (80×24) get tabs, one pane at a time.
WIDE_MIN = (120, 32)
#: The run / log column: wide enough for the numbers, and a share of a large terminal (at 200 columns a
#: fixed 46 left the log wrapping every line while the charts had 75 columns each).
LEFT_MIN, LEFT_SHARE, LEFT_MAX = 46, 0.28, 80
TICK_S = 0.25
#: Chart building per tick stops after this, leaving the rest for the next tick: a frame stays < 50 ms
#: even when every chart changed at once (measured: benchmarks/results/dashboard-long-run.json).
TICK_BUDGET_MS = 30.0


def left_column(width: int) -> int:
    return max(LEFT_MIN, min(LEFT_MAX, round(width * LEFT_SHARE)))


class DashboardScreen(RunControls, Screen):
    DEFAULT_CSS = DASHBOARD_CSS
    HELP_TITLE = "The dashboard"
    HELP_INTRO = """\
One run, live or finished: its loss, loss scale (fp16 runs), GPU, throughput and host charts, the \
numbers and the log. The control keys (p c s x) work while the run is live; u resumes a stopped, \
failed or lost run. Detaching leaves the run training: `zerotui attach RUN` comes back to it."""
    #: Footer entries kept first when the terminal is narrow (tui/common/footer.py).
    FOOTER_KEEP = ("pause_resume", "checkpoint", "stop", "resume_run", "detach", "runs", "clear_alerts", "zoom")
    BINDINGS = [
        Binding("p", "pause_resume", "Pause/resume", tooltip="pause the training loop, or resume it"),
        Binding("c", "checkpoint", "Checkpoint", tooltip="save a checkpoint at the next step"),
        Binding("s", "stop", "Stop", tooltip="stop with a checkpoint; `zerotui resume` continues later"),
        # x, t and l stay out of the footer (help lists them), so the rest fit 80 columns whole.
        Binding("x", "stop_now", "Stop now", show=False, tooltip="stop at the next step, without a checkpoint (asks first)"),
        Binding("u", "resume_run", "Resume run",
                tooltip="a stopped, failed or lost run: a new worker continues from its last checkpoint"),
        Binding("d,q", "detach", "Detach", tooltip="leave the dashboard; the run keeps training"),
        Binding("r", "runs", "Runs", tooltip="every run in this run's folder; Enter opens one"),
        # One key, two bindings: a run that is over opens the chat; on a live one the key says why not
        # without taking room in the footer (full at 80 columns while live). Help lists the key once.
        Binding("m", "chat", "Chat", tooltip="talk to the run's model, final/ or a checkpoint (a finished run)"),
        Binding("m", "chat_refused", "Chat", show=False, tooltip="a live run: says why its model is not loaded"),
        Binding("z", "zoom", "Zoom", tooltip="the whole run, the last hour, the last 10 minutes"),
        Binding("t", "x_axis", "Time/steps", show=False, tooltip="the charts' x axis: clock time or step number"),
        Binding("l", "log_scale", "Log loss", show=False, tooltip="a log scale for the loss"),
        Binding("a", "clear_alerts", "Clear alerts", tooltip="take the red frames off the alerted charts"),
        # The App's ctrl+q, out of this footer only: here it does what d does (RunNavigation.action_quit).
        Binding("ctrl+q", "app.quit", "Quit", show=False, priority=True,
                tooltip="leave the dashboard, as d does; the run keeps training"),
        *[Binding(str(i + 1), f"pane('{key}')", label, show=False,
                  tooltip="show that pane (small terminals show one pane at a time)")
          for i, (key, label) in enumerate(PANES)],
    ]

    def __init__(self, paths: RunPaths, live: bool = True, clock: Callable[[], float] = time.time,
                 poll_s: float = TICK_S) -> None:
        super().__init__()
        self.paths = RunPaths(Path(getattr(paths, "root", paths)))  # a RunPaths, a folder path or a str
        self.live = live                  # False: read-only (no control keys) whatever the run's state
        self.clock = clock                # tests freeze it: nothing on screen depends on the real time
        self.poll_s = poll_s
        self.history: Optional[RunHistory] = None
        self.state = "starting"
        self._seen_running = False   # a state report said running: its end is news (attaching to an old run is not)
        self.status: dict = {}
        self.zoom = 0
        self.x_mode = "time"
        self.pane = "loss"
        self.estimate_bytes: Optional[int] = None
        self.pending: dict[str, str] = {}  # control command id -> command, until the worker acks it
        self.alerted: set[str] = set()     # chart groups highlighted by an alert
        self.tick_ms: list[float] = []     # chart build time per tick (the benchmark reads it)
        self.load_seconds: Optional[float] = None
        self._stats_dirty = True
        self._last_stats = 0.0
        self._next_chart = 0

    # -- layout -----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield RunHeader(id="dash-header")
        yield Tabs(*[Tab(label, id=f"tab-{key}") for key, label in PANES], id="dash-tabs")
        with Container(id="dash-body"):
            yield StatPanel(id="pane-stats", classes="pane")
            yield PhasePanel(id="pane-phases", classes="pane")
            yield LossChart(id="chart-loss", classes="pane chart")
            yield LossScaleChart(id="chart-scale", classes="pane chart")
            yield RunLog(id="pane-log", classes="pane")
            with Horizontal(id="pane-gpu", classes="pane"):
                yield GpuUtilChart(id="chart-gpu-util", classes="chart")
                yield GpuMemoryChart(id="chart-gpu-mem", classes="chart")
            yield ThroughputChart(id="chart-speed", classes="pane chart")
            yield HostChart(id="chart-host", classes="pane chart")
        yield FitFooter()

    def on_mount(self) -> None:
        self.query_one(StatPanel).border_title = "run"
        self.query_one(PhasePanel).border_title = "start-up"
        self._layout()
        self._show_pane(self.pane)
        self._render_texts()
        self.follow_events()
        self.set_interval(self.poll_s, self._tick, name="dashboard redraw")

    def on_resize(self) -> None:
        self._layout()
        self._stats_dirty = True  # the status line picks its fields for the new width at the next tick

    def _layout(self) -> None:
        wide = self.size.width >= WIDE_MIN[0] and self.size.height >= WIDE_MIN[1]
        self.set_class(wide, "-wide")
        self.set_class(not wide, "-narrow")
        if wide:
            self.query_one("#dash-body").styles.grid_columns = f"{left_column(self.size.width)} 1fr 1fr"
        self.refresh_bindings()

    @property
    def charts(self) -> list[SeriesChart]:
        return list(self.query(SeriesChart))

    def _show_pane(self, key: str) -> None:
        self.pane = key
        for w in self.query(".pane"):
            w.set_class(w.id in (f"pane-{key}", f"chart-{key}") or (key == "loss" and w.id == "pane-phases"),
                        "-active")
        tabs = self.query_one(Tabs)
        if tabs.active != f"tab-{key}":
            tabs.active = f"tab-{key}"
        for chart in self.charts:
            chart.dirty = True

    @on(Tabs.TabActivated, "#dash-tabs")
    def _tab(self, event: Tabs.TabActivated) -> None:
        if event.tab.id and event.tab.id[4:] != self.pane:
            self._show_pane(event.tab.id[4:])

    # -- the thread that reads the file -----------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="dashboard-events",
          description="read and follow events.jsonl")
    def follow_events(self) -> None:
        worker = get_current_worker()
        started = time.perf_counter()
        history, offset = load_history(self.paths.events, cancelled=lambda: worker.is_cancelled)
        self.post_message(HistoryLoaded(history, offset, time.perf_counter() - started))
        follower = EventFollower(self.paths.events, offset)
        last_state: Optional[tuple] = None
        next_state_check = 0.0
        while not worker.is_cancelled:
            events, truncated = follower.poll()
            if truncated:  # rewritten by an outside tool: start again rather than count events twice
                history, follower.offset = load_history(self.paths.events, cancelled=lambda: worker.is_cancelled)
                self.post_message(HistoryLoaded(history, follower.offset, 0.0))
            elif events:
                # parsed into columns here, off the UI thread; the UI only ingests the result
                self.post_message(EventsArrived(parse_events(events)))
            if time.monotonic() >= next_state_check:
                next_state_check = time.monotonic() + 1.0
                status = read_status(self.paths)
                # Unsettled: the UI settles it with the history's run_finished (``outcome``).
                state = run_state(self.paths, now=self.clock(), finished=None)
                # Every heartbeat changes status.json; only a lost run shows it, so only then is it news.
                key = (state, status.get("state"), status.get("heartbeat") if state == "lost" else None)
                if key != last_state:
                    last_state = key
                    self.post_message(RunStateChanged(state, status))
            if not events:
                time.sleep(self.poll_s)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group.startswith("dashboard"):
            err = event.worker.error
            self.notify(f"{event.worker.description} failed: {err}", severity="error", timeout=10, markup=False)
            self.query_one(RunLog).note(self.clock(), f"{event.worker.description} failed: {err}", "error")

    # -- messages from the threads ----------------------------------------------------------------
    def on_history_loaded(self, message: HistoryLoaded) -> None:
        message.stop()
        self.history = message.history
        self.load_seconds = message.seconds
        for chart in self.charts:
            chart.set_history(self.history)
        log = self.query_one(RunLog)
        log.clear()
        log.add(self.history.log)
        self._show_estimate()
        self._stats_dirty = True
        self._tick()
        self.refresh_bindings()  # the keys depend on the outcome, which the history's end settles
        # Everything alive now (Textual's widgets, the libraries, this history) lives as long as this
        # screen: move it out of the collector's way. A full collection over it took 95-143 ms in the
        # long-run benchmark, stalling whichever frame it hit; afterwards only new objects are scanned.
        # on_unmount gives them back, so a closed dashboard's cycles are still collected.
        gc.freeze()

    def on_unmount(self) -> None:
        gc.unfreeze()

    def on_events_arrived(self, message: EventsArrived) -> None:
        message.stop()
        if self.history is None:
            return
        had_started = self.history.started
        changes = self.history.ingest(message.parsed)
        self._changed(changes)
        if self.history.started is not had_started:
            self._show_estimate()

    def _changed(self, ch: Changes) -> None:
        for group in ch.groups:
            for chart_id in GROUP_CHARTS.get(group, ()):
                self.query_one(f"#{chart_id}", SeriesChart).dirty = True
        if self.zoom and ch.groups & set(GROUP_CHARTS):  # a window sliding with time moves every chart
            for chart in self.charts:
                chart.dirty = True
        if ch.log:
            self.query_one(RunLog).add(ch.log)
        for alert in ch.alerts:
            kind = str(alert.get("kind") or "alert")
            self.notify(f"{alert.get('message', '')}\n{alert.get('hint', '')}".strip(), title=f"alert: {kind}",
                        severity="error" if kind in ("oom", "nonfinite_loss") else "warning", timeout=15, markup=False)
            self.alerted.add(ALERT_GROUP.get(kind, "loss"))
            desktop_notify(self.app, f"zerotui {self.paths.name}: alert ({kind})", str(alert.get("message", "")))
        for ack in ch.acks:
            command = self.pending.pop(str(ack.get("id")), None)
            if command is not None:
                ok = bool(ack.get("ok"))
                self.notify(f"{command}: {ack.get('message') or ('done' if ok else 'refused')}",
                            severity="information" if ok else "warning", markup=False)
        if ch.groups & {"stats", "state", "phase"} or ch.acks:
            self._stats_dirty = True
        if "state" in ch.groups:
            self.refresh_bindings()

    def _show_estimate(self) -> None:
        assert self.history is not None
        self.estimate_bytes = self.history.launch_gpu_bytes
        self.query_one(GpuMemoryChart).set_estimate(self.estimate_bytes)

    def on_run_resume_done(self, message: RunResumeDone) -> None:
        message.stop()
        if message.error:
            self.notify(in_tui_words(message.error), title="resume failed", severity="error", timeout=15, markup=False)
        else:
            self.notify("a new worker continues the run from its last checkpoint", title="resumed")
            self.query_one(RunLog).note(self.clock(), "resume requested: a new worker was started")

    # -- redraw -----------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.history is None:
            return
        startup = self.history.step is None and not self.finished and bool(self.history.phases)
        self.set_class(startup, "-startup")
        has_scale = self.history.series["loss_scale"].latest is not None
        self.set_class(not has_scale, "-no-scale")
        window = ZOOMS[self.zoom][1]
        for chart in self.charts:
            chart.configure(window, self.x_mode)
            chart.set_class(self._chart_group(chart) in self.alerted, "-alert")
        spent = 0.0
        charts = self.charts
        # Round-robin start: when the budget runs out, the charts left over go first next tick. A chart
        # is left for later when its last build time would take this tick past the budget.
        order = charts[self._next_chart:] + charts[:self._next_chart]
        for chart in order:
            if spent and chart.dirty and spent + (chart.build_ms or 10.0) > TICK_BUDGET_MS:
                self._next_chart = charts.index(chart)
                break
            spent += chart.redraw()
        if spent:
            self.tick_ms.append(spent)
            del self.tick_ms[:-1000]
        now = self.clock()
        if self._stats_dirty or (self.outcome in LIVE_STATES and now - self._last_stats >= 1.0):
            self._render_texts()

    @staticmethod
    def _chart_group(chart: SeriesChart) -> str:
        for group, ids in GROUP_CHARTS.items():
            if chart.id in ids:
                return group
        return ""

    def _render_texts(self) -> None:
        now = self.clock()
        self._stats_dirty = False
        self._last_stats = now
        self.query_one(StatPanel).show(self.history, now, self.outcome in LIVE_STATES)
        self.query_one(PhasePanel).show(self.history, now, self.outcome, self.finished)
        # "read-only" in the header whenever no control key applies: opened so, or the run is over
        controllable = self.live and self.outcome in LIVE_STATES + ("lost",)
        self.query_one(RunHeader).show(self.history, HeaderFacts(
            self.paths.name, self.outcome, controllable, ZOOMS[self.zoom][0], self.x_mode, self.status,
            list(self.pending.values()), self.finished), now)

    # -- actions (run controls: dashboard_controls.RunControls) ----------------------------------
    def action_zoom(self) -> None:
        self.zoom = (self.zoom + 1) % len(ZOOMS)
        self._stats_dirty = True
        self._tick()

    def action_x_axis(self) -> None:
        self.x_mode = "step" if self.x_mode == "time" else "time"
        self._stats_dirty = True
        self._tick()

    def action_log_scale(self) -> None:
        chart = self.query_one(LossChart)
        chart.log_y = not chart.log_y
        chart.dirty = True
        self._tick()

    def action_clear_alerts(self) -> None:
        self.alerted.clear()
        self.refresh_bindings()
        self._tick()

    def action_pane(self, key: str) -> None:
        self._show_pane(key)

    def action_chat_refused(self) -> None:
        self.action_chat()

    def action_chat(self) -> None:
        from zerotui.core.infer.weights import chat_refusal

        why = chat_refusal(self.outcome, self.paths.name)
        if why:
            self.notify(why, title="chat not opened", severity="warning", timeout=10, markup=False)
            return
        self.post_message(OpenChat(self.paths))

    def action_runs(self) -> None:
        self.post_message(ShowRuns(runs_dir=self.paths.root.parent))
