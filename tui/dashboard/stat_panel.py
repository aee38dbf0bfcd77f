"""The numbers beside the charts: step / total, epoch, loss, eval (loss, perplexity, ROUGE-L), lr, grad
norm, speed, checkpoint, time."""
from __future__ import annotations

from typing import Optional

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from zerotui.core.events.stream import as_float
from zerotui.core.events.history import RunHistory
from zerotui.core.run.overview import eval_scores
from zerotui.core.timefmt import format_clock, format_duration, format_number


def _num(ev: Optional[dict], key: str) -> Optional[float]:
    return as_float(ev.get(key)) if ev else None


class StatPanel(Static):
    """A two-column table of labels and values, rebuilt by the dashboard when its stats change (and
    every second while live, for the elapsed time)."""

    DEFAULT_CSS = """
    StatPanel {
        height: auto;
        padding: 0 1;
    }
    """

    _shown: Optional[list[tuple[str, str]]] = None

    def show(self, history: Optional[RunHistory], now: float, running: bool = True) -> None:
        """Update only when a value changed, and re-layout only when the number of rows did: a live
        dashboard calls this every second, and a layout pass repaints far more than this panel."""
        rows = self.rows(history, now, running) if history is not None else []
        if rows == self._shown and self._shown is not None:
            return
        layout = self._shown is None or len(rows) != len(self._shown)
        self._shown = rows
        self.update(self.table(history, now, running), layout=layout)

    @staticmethod
    def rows(history: RunHistory, now: float, running: bool = True) -> list[tuple[str, str]]:
        h = history
        ev = h.step
        step, total = h.current_step, h.total_steps
        step_text = "—" if step is None else f"{step:,}"
        if total:
            pct = f" ({100 * step / total:.1f}%)" if step is not None else ""
            step_text += f" / {total:,}{pct}"
        epoch = _num(ev, "epoch")
        loss = _num(ev, "loss")
        loss_text = format_number(loss, 4)
        if h.loss_ema is not None:
            loss_text += f"  (smoothed {format_number(h.loss_ema, 4)})"
        rows = [("step", step_text), ("epoch", "—" if epoch is None else f"{epoch:.2f}"), ("loss", loss_text)]
        if h.last_eval is not None:
            rows.append(("eval loss", f"{format_number(as_float(h.last_eval.get('loss')), 4)} at step "
                                      f"{h.last_eval.get('step', '?')}"))
            scores = eval_scores(h.last_eval)
            if scores:  # `zerotui eval`'s and the loop's own evals carry perplexity; ROUGE-L only the former
                rows.append(("eval", scores))
        rows.append(("lr", f"{format_number(_num(ev, 'lr'))}   grad norm {format_number(_num(ev, 'grad_norm'))}"))
        scale = _num(ev, "loss_scale")
        if scale is not None:
            kind = {True: "dynamic, ", False: "static: never moves, "}.get(ev.get("loss_scale_dynamic"), "")
            rows.append(("loss scale", f"{format_number(scale)}   ({kind}skipped steps: {int(h.skipped_total)})"))
        rows.append(("tokens/s", f"{format_number(_num(ev, 'tokens_per_s'))}   samples/s "
                                 f"{format_number(_num(ev, 'samples_per_s'))}"))
        step_time = _num(ev, "step_time")
        rows.append(("TFLOP/s", f"{format_number(_num(ev, 'tflops'))}   step "
                                f"{'—' if step_time is None else format_duration(step_time) if step_time >= 60 else f'{step_time:.2f} s'}"))
        ck = h.last_checkpoint
        if ck is not None:
            rows.append(("checkpoint", f"step {ck.get('step', '?')} at {format_clock(as_float(ck.get('t')), now)}"
                                       f"  ({h.checkpoints})"))
        else:
            rows.append(("checkpoint", "none yet"))
        if h.current_step is None and h.startup_s(now) is not None:
            # Not training yet: the start-up panel's own clock, so the two never disagree.
            rows.append(("start-up", format_duration(h.startup_s(now))))
        else:
            rows.append(("elapsed", format_duration(h.elapsed_s(now))))
        eta = h.eta_s() if running else None  # a lost run (its worker gone, no end recorded) has no ETA
        rows.append(("ETA", "—" if eta is None else f"{format_duration(eta)}   at {format_clock(now + eta, now)}"))
        return rows

    def table(self, history: Optional[RunHistory], now: float, running: bool = True) -> Table | Text:
        if history is None:
            return Text("reading the run…", style="dim")
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True, min_width=10)
        table.add_column(no_wrap=True, overflow="ellipsis")
        for label, value in self.rows(history, now, running):
            table.add_row(label, value)
        return table
