"""Step 3, precision: bf16 / fp16 / fp32, with the choices this machine cannot run disabled and why."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from zerotui.core.hardware.types import Hardware
from zerotui.tui.wizard.step import StepScreen
from zerotui.tui.wizard.field_help import FieldRow, choice_set, control_id, text_of
from zerotui.tui.common.ordered_input import OrderedInput

LABELS = {
    "bf16": "bf16: half of fp32's memory; no loss scaling",
    "fp16": "fp16: half the memory; needs loss scaling",
    "fp32": "fp32: twice the memory, slowest; debugging",
}


def _cpu_has_fp16(cpuinfo: Optional[str] = None) -> bool:
    """Whether oneDNN has fp16 kernels here: DeepSpeed's CPU accelerator allows fp16 only then
    (deepspeed/accelerator/cpu_accelerator.py ``is_fp16_supported`` asks
    ``torch.ops.mkldnn._is_mkldnn_fp16_supported()``, true with AVX512-FP16 or AMX-FP16). Reading the
    CPU flags answers the same question without importing torch on the UI path."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    flags = set(cpuinfo.split())
    return bool(flags & {"avx512_fp16", "amx_fp16"})


def precision_choices(hw: Optional[Hardware], cpuinfo: Optional[str] = None) -> list[tuple[str, str, str]]:
    """(value, label, why-disabled or "") for each precision on this hardware."""
    reasons = {"bf16": "", "fp16": "", "fp32": ""}
    if hw is not None and hw.gpus:
        old = [g for g in hw.gpus if not g.bf16]
        if old:
            g = old[0]
            cc = ".".join(str(x) for x in g.compute_capability)
            reasons["bf16"] = f"needs compute capability 8.0+ (Ampere); GPU {g.index} {g.name} is {cc}"
    elif hw is not None and not _cpu_has_fp16(cpuinfo):
        reasons["fp16"] = "no GPU, and this CPU lacks fp16 kernels (AVX512-FP16/AMX): DeepSpeed refuses fp16"
    return [(v, LABELS[v], reasons[v]) for v in ("bf16", "fp16", "fp32")]


class PrecisionScreen(StepScreen):
    STEP = "precision"

    def compose_form(self) -> ComposeResult:
        s = self.state
        hw = self.host.hardware
        yield FieldRow("precision", choice_set("precision", precision_choices(hw), s.value("precision")),
                       title="Precision")
        yield Static("", id="precision-note", markup=False)
        with Vertical(id="fp16-fields"):
            for field, title in (("fp16_initial_scale_power", "Initial scale 2^"),
                                 ("fp16_loss_scale_window", "Scale window"),
                                 ("fp16_hysteresis", "Hysteresis"),
                                 ("fp16_min_loss_scale", "Min loss scale")):
                yield FieldRow(field, OrderedInput(text_of(s.value(field)), id=control_id(field)), title=title)

    def on_mount(self) -> None:
        super().on_mount()
        self.refresh_derived()
        self.query_one(f"#{control_id('precision')}").focus()

    def refresh_derived(self) -> None:
        hw = self.host.hardware
        chosen = self.state.value("precision")
        self.query_one("#fp16-fields").display = chosen == "fp16"
        reasons = {v: r for v, _, r in precision_choices(hw) if r}
        note = self.query_one("#precision-note", Static)
        lines = [("✗ " if v == chosen else "") + f"{v} is not available here: {r}" for v, r in reasons.items()]
        note.update("\n".join(lines))
        note.set_class(chosen in reasons, "error")
