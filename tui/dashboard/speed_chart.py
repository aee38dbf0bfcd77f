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
        self.border_subtitle = legend(("cyan", f"tokens/s {format_number(s['tokens_per_s'].latest)}"),
                                      ("green", f"samples/s {format_number(s['samples_per_s'].latest)} →"),
                                      ("orange", f"TFLOP/s {format_number(s['tflops'].latest)} →"))
