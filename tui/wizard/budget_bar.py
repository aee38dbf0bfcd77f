"""The memory-budget bar docked under every wizard step: GPU, CPU RAM and NVMe, need vs capacity.

Colour is never the only signal: each bar also carries a word (OK, TIGHT, OVER)
and the numbers, so it reads the same under NO_COLOR and for colour-blind users.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol, runtime_checkable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Label, Static

from zerotui.core.sizes import format_bytes as _format_bytes
from zerotui.tui.common.tui_words import in_tui_words

#: Above this share of capacity a bar turns amber: real runs differ from any estimate by several per
#: cent (allocator fragmentation, CUDA context; docs/estimator.md), so 90 % is "tight".
TIGHT_RATIO = 0.90

def format_bytes(n: Optional[float]) -> str:
    """GiB/MiB as RAM and VRAM are sold and shown by nvidia-smi (core.sizes holds the one rule)."""
    return "—" if n is None else _format_bytes(n, digits=1)


def level(need: int, capacity: int) -> str:
    """ok | tight | over | none (nothing needed and nothing there) | missing (needed, nothing there)."""
    if capacity <= 0:
        return "none" if need <= 0 else "missing"
    ratio = need / capacity
    if ratio > 1.0:
        return "over"
    return "tight" if ratio > TIGHT_RATIO else "ok"


LEVEL_WORD = {"ok": "OK", "tight": "TIGHT", "over": "OVER", "none": "", "missing": "NONE"}


@dataclass(frozen=True)
class BudgetView:
    """What the bar shows: the latest budget plus why it may be stale or missing."""

    budget: Any = None          # core.estimate.budget.Budget
    pending: bool = False       # an estimate is running for a newer revision
    plan_error: str = ""        # the first invalid answer, when the answers do not make a Plan
    error: str = ""             # the estimator could not run (unknown model, ...)
    seconds: float = 0.0


@runtime_checkable
class BudgetHost(Protocol):
    """An App that owns the budget the bar shows (``ZeroTuiApp``); elsewhere the bar shows only what it
    is given through ``show``."""

    budget_view: BudgetView
    breakdown_expanded: bool

    def action_toggle_breakdown(self) -> None: ...


class MeterBar(Static):
    """A bar of █ (used) and ░ (free) filling its width; its colour comes from the level class."""

    ratio: reactive[float] = reactive(0.0)

    def render(self) -> Text:
        width = max(self.size.width, 1)
        filled = min(width, round(min(self.ratio, 1.0) * width))
        return Text("█" * filled + "░" * (width - filled))


class BudgetRow(Horizontal):
    def __init__(self, kind: str, title: str) -> None:
        super().__init__(id=f"budget-{kind}", classes="budget-row")
        self.kind = kind
        self.title = title

    def compose(self) -> ComposeResult:
        yield Label(self.title, classes="budget-name")
        yield MeterBar(classes="budget-meter")
        yield Label("", classes="budget-numbers")
        yield Label("", classes="budget-word")

    def show(self, need: int, capacity: int, absent: str) -> None:
        lv = level(need, capacity)
        for name in ("ok", "tight", "over", "none", "missing"):
            self.set_class(lv == name, f"level-{name}")
        meter = self.query_one(MeterBar)
        meter.ratio = (need / capacity) if capacity > 0 else (1.0 if need > 0 else 0.0)
        numbers = self.query_one(".budget-numbers", Label)
        if capacity > 0:
            numbers.update(f"{format_bytes(need)} / {format_bytes(capacity)} {need / capacity:4.0%}")
        elif need > 0:
            numbers.update(f"{format_bytes(need)} / none here")
        else:
            numbers.update(absent)
        self.query_one(".budget-word", Label).update(LEVEL_WORD[lv])
        self.need, self.capacity, self.level = need, capacity, lv


class BudgetBar(Vertical):
    """Docked at the bottom of each step; follows the app's ``budget_view`` reactive."""

    expanded: reactive[bool] = reactive(False)

    def compose(self) -> ComposeResult:
        yield Label("", id="budget-status")
        yield BudgetRow("gpu", "GPU")
        yield BudgetRow("cpu", "CPU RAM")
        yield BudgetRow("nvme", "NVMe")
        yield Static("", id="budget-breakdown")

    def on_mount(self) -> None:
        if isinstance(self.app, BudgetHost):
            self.watch(self.app, "budget_view", self.show, init=True)
            self.watch(self.app, "breakdown_expanded", self._set_expanded, init=True)

    def _set_expanded(self, value: bool) -> None:
        self.expanded = value

    def watch_expanded(self, value: bool) -> None:
        self.set_class(value, "expanded")
        self.border_title = "Memory budget (b: hide breakdown)" if value else "Memory budget (b: breakdown)"

    def on_click(self) -> None:
        if isinstance(self.app, BudgetHost):
            self.app.action_toggle_breakdown()
        else:
            self.expanded = not self.expanded

    def show(self, view: Optional[BudgetView]) -> None:
        view = view or BudgetView(pending=True)
        status = self.query_one("#budget-status", Label)
        b = view.budget
        for cls in ("fits", "no-fit", "invalid"):
            self.remove_class(cls)
        if view.plan_error:
            self.add_class("invalid")
            status.update(Text(f"✗ INVALID  {in_tui_words(view.plan_error)}"))  # may quote a value typed
        elif view.error:
            self.add_class("invalid")
            status.update(Text(f"? UNKNOWN  {in_tui_words(view.error)}"))
        elif b is None:
            status.update("… estimating")
        elif b.fits:
            self.add_class("fits")
            status.update("✓ FITS  this plan fits this machine" + ("  (updating…)" if view.pending else ""))
        else:
            self.add_class("no-fit")
            status.update("✗ DOES NOT FIT  press ctrl+g to Fit this plan to the machine"
                          + ("  (updating…)" if view.pending else ""))
        if b is None:
            return
        self.query_one("#budget-gpu", BudgetRow).show(b.gpu_bytes, b.gpu_capacity, "no GPU: runs on the CPU")
        self.query_one("#budget-cpu", BudgetRow).show(b.cpu_bytes, b.cpu_capacity, "")
        self.query_one("#budget-nvme", BudgetRow).show(b.nvme_bytes, b.nvme_capacity, "not used")
        self.query_one("#budget-breakdown", Static).update(self._breakdown_table(b))

    @staticmethod
    def _breakdown_table(b: Any) -> Table:
        gpu_peak = f" at its peak ({b.peak_phase})" if getattr(b, "peak_phase", "") else ""
        cpu_peak = f" ({b.host_phase})" if getattr(b, "host_phase", "") else ""
        devices = [d for d in ("gpu", "cpu", "nvme") if (b.breakdown or {}).get(d)]
        # No GPU column (a CPU run): no "GPU: per GPU at its peak" under it either.
        caption = "; ".join(([f"GPU: per GPU{gpu_peak}"] if "gpu" in devices else [])
                            + [f"CPU RAM: per machine{cpu_peak}"])
        table = Table(box=None, pad_edge=False, show_edge=False, expand=False, caption_justify="left",
                      caption=caption)
        table.add_column("part")
        for d in devices:
            table.add_column(d.upper() if d != "cpu" else "CPU RAM", justify="right")
        names: list[str] = []
        for d in devices:
            names += [n for n in b.breakdown[d] if n not in names]
        for name in names:
            table.add_row(name.replace("_", " "),
                          *[format_bytes(b.breakdown[d][name]) if name in b.breakdown[d] else "" for d in devices])
        table.add_row("total", *[format_bytes(getattr(b, f"{d}_bytes")) for d in devices], style="bold")
        return table
