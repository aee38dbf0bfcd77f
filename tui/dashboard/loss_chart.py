"""The loss pane (raw spread, smoothed curve, eval loss on top) and the fp16 loss-scale pane."""
from __future__ import annotations

from zerotui.core.events.history import RunHistory
from zerotui.core.run.overview import eval_scores
from zerotui.core.timefmt import format_number

from zerotui.tui.dashboard.charts import DrawContext, SeriesChart, legend


class LossChart(SeriesChart):
    """Training loss: the min-max spread of the raw values per column (grey), the smoothed loss (cyan),
    and eval losses as points (orange). ``log_y`` is toggled by the dashboard (l)."""

    TITLE = "loss"
    EMPTY = "loss: waiting for the first step"

    def has_data(self, history: RunHistory) -> bool:
        return history.series["loss"].count > 0 or history.series["eval_loss"].count > 0

    def draw(self, ctx: DrawContext) -> None:
        self.band(ctx, self.view(ctx, "loss"), color="gray")
        self.line(ctx, self.view(ctx, "loss_smooth"), color="cyan")
        ev = self.view(ctx, "eval_loss")
        if len(ev):
            self.markers(ctx, self.x_of(ctx, ev), ev.last, color="orange", marker="●")
        h = ctx.history
        smooth = format_number(h.loss_ema, 4)
        ev = h.series["eval_loss"].latest
        evals = [("orange", f"eval {format_number(ev, 4)}")] if ev is not None else []
        scores = eval_scores(h.last_eval) if ev is not None else ""
        scored = [("orange", f"eval {format_number(ev, 4)} · {scores}")] if scores else evals
        log = " · log" if self.log_y else ""
        # narrower panes drop the eval's scores, then words, then the raw spread's key; the numbers stay
        self.fit_subtitle(legend(("gray", "raw"), ("cyan", f"smoothed {smooth}"), *scored) + log,
                          legend(("gray", "raw"), ("cyan", f"smoothed {smooth}"), *evals) + log,
                          legend(("gray", "raw"), ("cyan", smooth), *evals) + log,
                          legend(("cyan", smooth), *evals) + log)


class LossScaleChart(SeriesChart):
    """fp16 dynamic loss scale on a log axis, with the steps it skipped (overflow) marked ×.

    bf16 and fp32 runs have no loss scale (DeepSpeed's bf16 optimizer keeps none): the dashboard hides
    this pane for them."""

    TITLE = "fp16 loss scale"
    EMPTY = "loss scale: none yet (bf16 and fp32 runs have none)"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.log_y = True

    def has_data(self, history: RunHistory) -> bool:
        return history.series["loss_scale"].latest is not None

    def draw(self, ctx: DrawContext) -> None:
        scale = self.view(ctx, "loss_scale")
        self.line(ctx, scale, color="green", field="lo")
        skipped = self.view(ctx, "skipped")
        # A bucket that skipped any step gets a mark at the scale's low point in that bucket (the scale
        # halves on an overflow, so the low point is where the skip happened). Both series come from the
        # same step events, so their buckets line up one to one.
        if len(skipped) and len(skipped) == len(scale):
            hit = skipped.tot > 0
            self.markers(ctx, self.x_of(ctx, skipped)[hit], scale.lo[hit], color="red", marker="x")
        h = ctx.history
        static = (h.step or {}).get("loss_scale_dynamic") is False  # DeepSpeed's LossScaler: a fixed scale
        scale = legend(("green", f"scale {format_number(h.series['loss_scale'].latest)}"
                               + (" (static)" if static else "")))
        self.fit_subtitle(f"{scale} · [red]x[/] skipped {int(h.skipped_total)}", scale)

    def empty_text(self, history: RunHistory) -> str:
        precision = history.plan.get("precision")
        if precision in ("bf16", "fp32"):  # the tab is still there on a small terminal: say why it is empty
            return f"No loss scale: loss scaling applies only to fp16, and this run is {precision}."
        return self.EMPTY
