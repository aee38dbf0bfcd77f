"""GPU panes: utilisation and memory per GPU, the memory chart with the plan's estimate as a reference."""
from __future__ import annotations

from typing import Optional

from zerotui.core.events.history import RunHistory
from zerotui.core.sizes import format_bytes

from zerotui.tui.dashboard.charts import DrawContext, SeriesChart, legend

GIB = 1024 ** 3
#: One colour per GPU index (cycled past eight), the same in both GPU panes.
GPU_COLORS = ("cyan", "green", "orange", "magenta", "blue", "yellow", "red", "white")


def _gpus(history: RunHistory) -> list[int]:
    return history.gpu_indices


class GpuUtilChart(SeriesChart):
    """Utilisation (%) per GPU: each GPU's spread per column; with many GPUs a low one stands out."""

    TITLE = "GPU util %"
    EMPTY = "no GPU telemetry (CPU run, or NVML unavailable)"

    def has_data(self, history: RunHistory) -> bool:
        return bool(_gpus(history))

    def draw(self, ctx: DrawContext) -> None:
        for i in _gpus(ctx.history):
            color = GPU_COLORS[i % len(GPU_COLORS)]
            self.line(ctx, self.view(ctx, f"gpu{i}.util"), color=color, field="mean")
        self._ys["left"].extend((0.0, 100.0))  # always the full 0-100% range: 60% must look like 60%
        self.plt.ylim(0, 100)
        latest = [ctx.history.gpu_latest.get(i, {}) for i in _gpus(ctx.history)]
        utils = [g.get("util") for g in latest if isinstance(g.get("util"), (int, float))]
        temps = [g.get("temp_c") for g in latest if isinstance(g.get("temp_c"), (int, float))]
        power = [g.get("power_w") for g in latest if isinstance(g.get("power_w"), (int, float))]
        parts = [legend(*[(GPU_COLORS[i % len(GPU_COLORS)], str(i)) for i in _gpus(ctx.history)][:8])]
        if utils:
            parts.append(f"now {min(utils):.0f}–{max(utils):.0f}%" if len(utils) > 1 else f"now {utils[0]:.0f}%")
        if power:
            parts.append(f"{sum(power):.0f} W")
        if temps:
            parts.append(f"max {max(temps):.0f}°C")
        # a narrow pane keeps the GPUs' colours and drops the rest from the right
        self.fit_subtitle(*[" · ".join(parts[:n]) for n in range(len(parts), 0, -1)])


class GpuMemoryChart(SeriesChart):
    """Memory used per GPU (GiB, each GPU's peak per column), the card's capacity, and the estimate."""

    TITLE = "GPU memory GiB"
    EMPTY = "no GPU telemetry (CPU run, or NVML unavailable)"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.estimate_bytes: Optional[int] = None

    def set_estimate(self, gpu_bytes: Optional[int]) -> None:
        if gpu_bytes != self.estimate_bytes:
            self.estimate_bytes = gpu_bytes
            self.dirty = True

    def has_data(self, history: RunHistory) -> bool:
        return bool(_gpus(history))

    def draw(self, ctx: DrawContext) -> None:
        h = ctx.history
        for i in _gpus(h):
            color = GPU_COLORS[i % len(GPU_COLORS)]
            self.line(ctx, self.view(ctx, f"gpu{i}.mem_used"), color=color, field="hi", scale=1 / GIB)
        total = min(h.gpu_total.values()) if h.gpu_total else None
        if total:
            self.hline(total / GIB, color="red")
        if self.estimate_bytes:
            self.hline(self.estimate_bytes / GIB, color="yellow")
        used = [h.series[f"gpu{i}.mem_used"].latest for i in _gpus(h)]
        used = [u for u in used if u is not None]
        long, short = [], []  # short: GiB without the unit (the pane's title says GiB)
        if used:
            long.append(f"max {format_bytes(max(used))}")
            short.append(f"max {max(used) / GIB:.1f}")
        if total:
            long.append(legend(("red", f"card {format_bytes(total)}")))
            short.append(legend(("red", f"card {total / GIB:.0f}")))
        if self.estimate_bytes:
            long.append(legend(("yellow", f"estimate {format_bytes(self.estimate_bytes)}")))
            short.append(legend(("yellow", f"est. {self.estimate_bytes / GIB:.1f}")))
        self.fit_subtitle(" · ".join(long), " · ".join(short), " ".join(short), " ".join(short[-2:]))
