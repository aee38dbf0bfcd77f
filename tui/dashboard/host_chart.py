"""Host pane: CPU % on the left axis; RAM used and the worker's RSS (GiB) on the right, with total RAM.

CPU-offload runs live or die by host RAM (the kernel's OOM killer ends them with -9 and no message),
so RAM sits here next to the CPU, on the same time axis as the loss."""
from __future__ import annotations

from zerotui.core.events.history import RunHistory
from zerotui.core.sizes import format_bytes

from zerotui.tui.dashboard.charts import DrawContext, SeriesChart, legend

GIB = 1024 ** 3


class HostChart(SeriesChart):
    TITLE = "host CPU % · RAM GiB"
    EMPTY = "host: waiting for telemetry"

    def has_data(self, history: RunHistory) -> bool:
        return history.series["cpu_percent"].count > 0 or history.series["ram_used"].count > 0

    def draw(self, ctx: DrawContext) -> None:
        h = ctx.history
        self.line(ctx, self.view(ctx, "cpu_percent"), color="cyan", field="mean")
        self.line(ctx, self.view(ctx, "ram_used"), color="green", field="hi", scale=1 / GIB, yside="right")
        self.line(ctx, self.view(ctx, "rss"), color="orange", field="hi", scale=1 / GIB, yside="right")
        if h.ram_total:
            self.hline(h.ram_total / GIB, color="red", yside="right")
        s = h.series
        cpu = s["cpu_percent"].latest
        items = [("cyan", f"CPU {cpu:.0f}%" if cpu is not None else "CPU")]
        ram = s["ram_used"].latest
        total = f"/{format_bytes(h.ram_total)}" if h.ram_total else ""
        items.append(("green", f"RAM {format_bytes(ram)}{total} →" if ram is not None else "RAM"))
        if s["rss"].latest is not None:
            items.append(("orange", f"worker {format_bytes(s['rss'].latest)} →"))
        # narrower: RAM in GiB without units (the title says GiB), then without the worker's share
        short = list(items)
        if ram is not None:
            total_gib = f"/{h.ram_total / GIB:.0f}" if h.ram_total else ""
            short[1] = ("green", f"RAM {ram / GIB:.1f}{total_gib} →")
        self.fit_subtitle(legend(*items), legend(*short), legend(*short[:2]), legend(*short[:1]))
