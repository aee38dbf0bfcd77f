"""Throughput pane: tokens/s on the left axis; samples/s and achieved TFLOP/s on the right one."""
from __future__ import annotations

from zerotui.core.events.history import RunHistory
from zerotui.core.timefmt import format_number

from zerotui.tui.dashboard.charts import DrawContext, SeriesChart, legend


class ThroughputChart(SeriesChart):
    TITLE = "throughput"
    EMPTY = "throughput: waiting for the first step"

    def has_data(self, history: RunHistory) -> bool:
        return history.series["tokens_per_s"].count > 0

    def draw(self, ctx: DrawContext) -> None:
        self.line(ctx, self.view(ctx, "tokens_per_s"), color="cyan", field="mean")
        self.line(ctx, self.view(ctx, "samples_per_s"), color="green", field="mean", yside="right")
        self.line(ctx, self.view(ctx, "tflops"), color="orange", field="mean", yside="right")
        s = ctx.history.series
        tokens, samples, tflops = (format_number(s[k].latest) for k in ("tokens_per_s", "samples_per_s", "tflops"))
        long = [("cyan", f"tokens/s {tokens}"), ("green", f"samples/s {samples} →"), ("orange", f"TFLOP/s {tflops} →")]
        short = [("cyan", f"tok/s {tokens}"), ("green", f"seq/s {samples} →"), ("orange", f"TFLOP/s {tflops} →")]
        # a narrow pane gets the short words first, then loses the right axis' series from the right
        self.fit_subtitle(legend(*long), legend(*short), legend(*short[:2]), legend(*short[:1]))
