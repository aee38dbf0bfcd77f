"""Step 4, ZeRO and offload: the stage with its trade-off, where optimizer states and weights live, the
NVMe folder (free space, measured write speed), pinned memory and activation checkpointing."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, Static

from zerotui.core.errors import ZeroTuiError
from zerotui.core.hardware.disks import free_bytes_at
from zerotui.core.run.launcher import gpu_choice_problem
from zerotui.tui.messages import WriteSpeedMeasured
from zerotui.tui.wizard.step import StepScreen
from zerotui.tui.wizard.budget_bar import format_bytes
from zerotui.tui.wizard.field_help import Tick, Choice, FieldRow, choice_set, control_id, field_text, text_of
from zerotui.tui.common.path_picker import PathPickerScreen
from zerotui.tui.common.ordered_input import OrderedInput

# One line each: what the stage shards and what it costs (ZeRO paper, Rajbhandari et al. 2020, §5).
STAGES = [
    (0, "0  plain data parallel: least traffic, most memory"),
    (1, "1  shards optimizer states: saves 12 B/param ÷ GPUs"),
    (2, "2  + gradients: the usual choice; offload works"),
    (3, "3  + weights: the largest models; most traffic"),
]
OFFLOAD = {
    "offload_optimizer": {
        "none": "none: on the GPU (fastest)",
        "cpu": "cpu: host RAM, Adam runs on the CPU (slower)",
        "nvme": "nvme: disk, frees RAM too (slowest)",
    },
    "offload_params": {
        "none": "none: on the GPU (fastest)",
        "cpu": "cpu: host RAM, fetched for each layer (slower)",
        "nvme": "nvme: disk, frees RAM too (slowest)",
    },
}
#: Below this the disk, not the GPU, sets the step time with NVMe offload: ZeRO-Infinity's results
#: (Rajbhandari et al. 2021) were measured with drives writing several GB/s.
SLOW_DISK_BYTES_PER_S = 1e9


#: The Plan's own description speaks of the CLI; here, what the field does to this screen and the run.
GPU_MEM_CAP_HELP = ("Caps every rank's GPU allocator at this size (24GiB, 20G, 80GB); the budget bar and Fit "
                    "use it as the GPU's capacity. Empty: the whole GPU.")

#: With no GPU, "none" keeps the states in the training process's own RAM: "on the GPU" would be false.
NO_GPU_NONE = "none: in the training process's RAM"


def offload_choices(field: str, stage: int, has_nvme_disk: bool, has_gpu: bool = True,
                    method: str = "full") -> list[tuple[str, str, str]]:
    out = []
    for value in ("none", "cpu", "nvme"):
        reason = ""
        if value != "none":
            if field == "offload_params" and method == "qlora":
                reason = "not with QLoRA"  # its quantised base stays on the GPU (core/plan/schema.py)
            elif field == "offload_params" and stage != 3:
                reason = "stage 3 only"
            elif field == "offload_optimizer" and stage == 0:
                reason = "needs stage 1, 2 or 3"
            elif field == "offload_optimizer" and value == "nvme" and stage != 3:
                reason = "stage 3 only"  # DeepSpeed's stages 1-2 keep it in host RAM (core/plan/schema.py)
        label = NO_GPU_NONE if value == "none" and not has_gpu else OFFLOAD[field][value]
        out.append((value, label, reason))
    return out


def gpu_choice_words(plan: Any, hw: Any) -> str:
    """'2 processes on GPUs 0,2 (H200, 141.0 GiB each); the budget is per GPU' — what the answers mean."""
    count = hw.gpu_count if hw is not None else 0
    world = plan.world_size(count)
    per_node = plan.gpus_per_node(count)
    nodes = f" on each of {plan.nodes} nodes" if plan.nodes > 1 else ""
    if count == 0:
        if per_node == 1:
            return f"1 process (no GPU detected){nodes}"
        return (f"{per_node} CPU processes{nodes} (gloo, no GPU detected): how the several-GPU path is tested "
                f"on a CPU machine; world size {world}")
    ids = plan.gpu_ids if plan.gpu_ids is not None else list(range(per_node))
    names = {g.index: g for g in hw.gpus}
    first = names.get(ids[0]) if ids else None
    what = f" ({first.name}, {format_bytes(first.total_bytes)} each)" if first is not None else ""
    procs = "1 process" if per_node == 1 else f"{per_node} processes"
    return (f"{procs} on GPU{'s' if len(ids) > 1 else ''} {','.join(map(str, ids))}{what}{nodes}; "
            f"world size {world}; the budget below is per GPU")


class ZeroOffloadScreen(StepScreen):
    STEP = "zero"

    def compose_form(self) -> ComposeResult:
        s = self.state
        stage = int(s.value("stage")) if str(s.value("stage")).isdigit() else 2
        yield FieldRow("stage", choice_set("stage", [(v, label, "") for v, label in STAGES], s.value("stage")),
                       title="ZeRO stage")
        yield Static("", id="stage-note", classes="derived", markup=False)
        nvme = bool((self.host.hardware.nvme_disks if self.host.hardware else []))
        gpu = self.host.hardware is None or self.host.hardware.gpu_count > 0
        yield FieldRow("offload_optimizer", choice_set("offload_optimizer",
                                                       offload_choices("offload_optimizer", stage, nvme, gpu),
                                                       s.value("offload_optimizer")), title="Optimizer offload")
        yield FieldRow("offload_params", choice_set("offload_params", offload_choices("offload_params", stage, nvme, gpu),
                                                    s.value("offload_params")), title="Weight offload")
        yield FieldRow("nvme_path", OrderedInput(text_of(s.value("nvme_path")), id=control_id("nvme_path"),
                                          placeholder="a folder on a local NVMe drive"),
                       title="NVMe folder", extra=[Button("Browse…", id="browse-nvme", classes="browse")])
        with Horizontal(id="nvme-check"):
            yield Label("", id="nvme-space")
            yield Button("Check write speed", id="probe-nvme", compact=True)
            yield Label("", id="nvme-speed")
        yield FieldRow("pin_memory", Tick(bool(s.value("pin_memory")), id=control_id("pin_memory")),
                       title="Pin memory")
        yield FieldRow("grad_ckpt", Tick(bool(s.value("grad_ckpt")), id=control_id("grad_ckpt")),
                       title="Activation ckpt")
        yield FieldRow("gpus", OrderedInput(text_of(s.value("gpus")), id=control_id("gpus"),
                                     placeholder="empty: every detected GPU"), title="GPUs to use")
        # Which GPUs: offered when there is a choice (several GPUs); the launcher pins them (--include).
        yield FieldRow("gpu_ids", OrderedInput(text_of(s.value("gpu_ids")), id=control_id("gpu_ids"),
                                        placeholder="empty: the first N; or indices, e.g. 0,2"),
                       title="Which GPUs")
        yield Static("", id="gpu-note", classes="derived", markup=False)
        yield FieldRow("gpu_mem_cap", OrderedInput(field_text("gpu_mem_cap", s.value("gpu_mem_cap")),
                                                   id=control_id("gpu_mem_cap"),
                                                   placeholder="empty: the whole GPU; or a size, e.g. 24GiB"),
                       title="GPU memory cap", help=GPU_MEM_CAP_HELP)

    def on_mount(self) -> None:
        super().on_mount()
        self.refresh_derived()
        self.query_one(f"#{control_id('stage')}").focus()

    def refresh_derived(self) -> None:
        raw = self.state.value("stage")
        stage = raw if isinstance(raw, int) else self.state.plan.stage
        hw = self.host.hardware
        nvme_disk = bool(hw.nvme_disks) if hw is not None else False
        has_gpu = hw is None or hw.gpu_count > 0
        for field in ("offload_optimizer", "offload_params"):
            for (value, label, reason), button in zip(offload_choices(field, stage, nvme_disk, has_gpu,
                                                                      str(self.state.value("method"))),
                                                      self.query_one(f"#{control_id(field)}").query(Choice)):
                button.disabled = bool(reason) and not button.value  # never trap the user on a chosen value
                button.label = label + (f"  ({reason})" if reason else "")
                button.tooltip = reason or None
        self._show_stage_note()
        self._show_gpu_choice(hw)
        uses_nvme = "nvme" in (self.state.value("offload_optimizer"), self.state.value("offload_params"))
        self.query_one("#row-nvme_path").display = uses_nvme
        self.query_one("#nvme-check").display = uses_nvme
        if uses_nvme:
            self._show_space()

    def _show_stage_note(self) -> None:
        if self.state.errors:
            return  # the numbers would be for the last valid plan, not the one on screen
        from zerotui.tui.wizard.stage_note import stage_note
        self.query_one("#stage-note", Static).update(stage_note(self.state.plan, self.host.hardware, self.host.spec))

    def budget_changed(self) -> None:
        super().budget_changed()
        self._show_stage_note()  # the model's spec may have just been resolved

    def _show_gpu_choice(self, hw: Any) -> None:
        """The GPU rows: which GPUs only when there are several; what the answers mean (how many
        processes on which GPUs); and a choice this machine cannot honour, marked on its row."""
        count = hw.gpu_count if hw is not None else 0
        # Kept while its box has focus: emptying it must not hide the row under the cursor (the next
        # digit typed would then jump to a step).
        self.query_one("#row-gpu_ids").display = (count > 1 or self.state.value("gpu_ids") is not None
                                                  or self.query_one(f"#{control_id('gpu_ids')}").has_focus)
        note = self.query_one("#gpu-note", Static)
        plan = self.state.plan
        # One GPU (or a CPU) and one process: nothing to choose, nothing to explain.
        note.display = (count > 1 or plan.world_size(count) > 1) and not (
            self.state.errors.get("gpus") or self.state.errors.get("gpu_ids")
            or gpu_choice_problem(plan, hw) is not None)
        note.update(gpu_choice_words(plan, hw) if note.display else "")

    def field_errors(self) -> dict[str, str]:
        """The answers' errors, plus GPUs this machine does not have (marked on the gpus / gpu_ids row;
        launching refuses them too, core/run/start.py preflight)."""
        errors = super().field_errors()
        if not self.state.errors:
            problem = gpu_choice_problem(self.state.plan, self.host.hardware)
            if problem is not None:
                errors.setdefault(problem[0], f"{problem[1]} ({problem[2]})")
        return errors

    def _show_space(self) -> None:
        raw = self.state.value("nvme_path")
        path = Path(str(raw)).expanduser() if raw else None
        if path is None:
            self.query_one("#nvme-space", Label).update("pick a folder")
            return
        hw = self.host.hardware
        disk = None
        if hw is not None:
            from zerotui.core.hardware.disks import disk_for_path
            disk = disk_for_path(path, hw.disks)
        # The drive as the hardware lists it (what the budget uses), else ask the filesystem now.
        free = disk.free_bytes if disk is not None else free_bytes_at(path) if path is not None else None
        kind = "" if disk is None else (" on NVMe" if disk.nvme else " (not an NVMe drive: slow)")
        self.query_one("#nvme-space", Label).update(
            f"{format_bytes(free)} free{kind}" if free is not None else "cannot read this folder")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "browse-nvme":
            raw = self.state.value("nvme_path")
            start = Path(str(raw)).expanduser() if raw else None

            def picked(path: Optional[Path]) -> None:
                if path is not None:
                    self.query_one(f"#{control_id('nvme_path')}", Input).value = str(path)
            self.app.push_screen(PathPickerScreen("Choose the NVMe offload folder", want="dir", start=start), picked)
        elif event.button.id == "probe-nvme":
            raw = self.state.value("nvme_path")
            if not raw:
                self.query_one("#nvme-speed", Label).update("✗ choose a folder first")
                return
            self.query_one("#nvme-speed", Label).update("measuring (writes 256 MiB)…")
            event.button.disabled = True
            self.probe(Path(str(raw)).expanduser())

    @work(thread=True, exclusive=True, exit_on_error=False, group="nvme-probe",
          description="measure the NVMe folder's write speed")
    def probe(self, path: Path) -> None:
        try:
            from zerotui.core.hardware.disks import probe_write_speed
            message = WriteSpeedMeasured(path, probe_write_speed(path))
        except ZeroTuiError as err:
            message = WriteSpeedMeasured(path, error=err.one_line())
        self.post_message(message)

    def on_write_speed_measured(self, message: WriteSpeedMeasured) -> None:
        self.query_one("#probe-nvme", Button).disabled = False
        label = self.query_one("#nvme-speed", Label)
        if message.error:
            label.update(Text(f"✗ {message.error}"))  # quotes the path typed
            return
        speed: Any = message.bytes_per_s or 0.0
        slow = "  SLOW: the disk will set the step time" if speed < SLOW_DISK_BYTES_PER_S else "  OK"
        label.update(f"writes {speed / 1e9:.2f} GB/s{slow}")
