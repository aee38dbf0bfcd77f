"""The first screen: what this machine has, what that means in plain words, and where to go next
(a new run, a preset, or a run to attach to)."""
from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, DataTable, Header, Label, LoadingIndicator, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from zerotui.core.hardware.types import Hardware
from zerotui.tui.messages import OpenRun, RecentRunsListed
from zerotui.tui.wizard.budget_bar import format_bytes
from zerotui.tui.common.footer import FitFooter
from zerotui.tui.common.table_fill import fill_table
from zerotui.tui.wizard.host import wizard_host

GIB = 1 << 30
#: Below this, CPU offload is limited to small models: a 7B full fine-tune offloads 16–18 bytes per
#: parameter of optimizer state, ~110 GiB (docs/estimator.md, "Offload").
LITTLE_RAM = 32 * GIB
#: Docker's default /dev/shm is 64 MiB; DeepSpeed's shm comm and NCCL need far more.
SMALL_SHM = 1 * GIB


def _disk_kind(disk) -> str:
    if disk.nvme:
        return "NVMe"
    return "HDD" if disk.rotational else "SSD" if disk.rotational is False else "disk"


def hardware_warnings(hw: Hardware) -> list[str]:
    """What the hardware means for fine-tuning, in plain words, most important first."""
    out: list[str] = []
    if not hw.gpus:
        why = f" ({hw.nvml_error})" if hw.nvml_error else ""
        out.append(f"No GPU found{why}: only the tiny CPU demo can train here. "
                   "Planning for a GPU machine still works (Fit, Export).")
    else:
        for g in hw.gpus:
            if not g.bf16:
                cc = ".".join(str(x) for x in g.compute_capability)
                out.append(f"GPU {g.index} ({g.name}, compute {cc}) has no native bf16: use fp16 or fp32.")
            if g.total_bytes and g.free_bytes < 0.9 * g.total_bytes:
                out.append(f"GPU {g.index}: {format_bytes(g.total_bytes - g.free_bytes)} already in use "
                           "by other processes; the budget counts the whole card.")
    if not hw.nvme_disks:
        out.append("No NVMe disk found: NVMe offload is unavailable (a slow disk would stall training).")
    if hw.ram_total_bytes and hw.ram_total_bytes < LITTLE_RAM:
        out.append(f"Only {format_bytes(hw.ram_total_bytes)} of RAM: CPU offload is limited to small models "
                   "(a 7B full fine-tune offloads ~110 GiB of optimizer state).")
    if hw.shm_total_bytes and hw.shm_total_bytes < SMALL_SHM:
        out.append(f"/dev/shm is only {format_bytes(hw.shm_total_bytes)}: DeepSpeed and NCCL need more; "
                   "start the container with --shm-size=8g.")
    return out


class HardwareScreen(Screen):
    HELP_TITLE = "This machine (the first screen)"
    HELP_INTRO = """\
zerotui plans a DeepSpeed ZeRO fine-tune, checks that it fits this machine, and launches it.

This screen shows what the machine has and what that means for fine-tuning. Start a new run, start from \
a preset, or open the dashboard of a run (Enter on one of the recent runs)."""
    BINDINGS = [
        Binding("n", "app.new_run", "New run", tooltip="the wizard, from the default plan"),
        Binding("p", "app.choose_preset", "Preset", tooltip="load a preset and open its review"),
        Binding("a", "app.attach", "Attach", tooltip="the list of runs, live and past; Enter opens one"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="hardware"):
            yield LoadingIndicator(id="hw-loading")
            yield Label("Detecting GPUs, RAM and disks…", id="hw-detecting")
            yield Static("", id="hw-summary", markup=False)
            yield DataTable(id="hw-gpus", show_cursor=False, zebra_stripes=True)
            yield DataTable(id="hw-disks", show_cursor=False, zebra_stripes=True)
            yield Vertical(id="hw-warnings")
            yield Label("Recent runs (Enter to attach)", id="hw-runs-title", classes="section-title")
            yield OptionList(id="hw-runs")
        with Horizontal(id="hw-actions"):
            yield Button("New run  n", id="new-run", variant="primary", compact=True)
            yield Button("From a preset  p", id="from-preset", compact=True)
            yield Button("Attach to a run  a", id="attach-run", compact=True)
        yield FitFooter()

    def on_mount(self) -> None:
        self.sub_title = "this machine"
        for t in ("#hw-gpus", "#hw-disks", "#hw-runs-title", "#hw-runs"):
            self.query_one(t).display = False
        hw = wizard_host(self).hardware
        if hw is not None:
            self.show_hardware(hw, wizard_host(self).hardware_error)
        self.load_recent_runs()
        self.query_one("#new-run", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"new-run": "new_run", "from-preset": "choose_preset", "attach-run": "attach"}
        if event.button.id in actions:
            self.app.run_action(actions[event.button.id])

    def show_hardware(self, hw: Hardware, error: str = "") -> None:
        self.query_one("#hw-loading").display = False
        self.query_one("#hw-detecting").display = False
        cpu = hw.cpu_model or "CPU"
        lines = [
            f"CPU   {cpu}: {hw.cpu_cores} cores, {hw.cpu_threads} threads",
            f"RAM   {format_bytes(hw.ram_total_bytes)} total, {format_bytes(hw.ram_available_bytes)} available"
            f"   swap {format_bytes(hw.swap_total_bytes)}   /dev/shm {format_bytes(hw.shm_total_bytes)}",
        ]
        if hw.driver_version:
            lines.append(f"Driver {hw.driver_version}, CUDA {hw.cuda_driver_version or '?'}")
        if hw.source != "detected":
            lines.append(f"(hardware {hw.source}, not detected)")
        self.query_one("#hw-summary", Static).update("\n".join(lines))

        gpus = self.query_one("#hw-gpus", DataTable)
        gpus.display = bool(hw.gpus)
        fill_table(gpus, ("GPU", "name", "memory", "free", "compute", "bf16") if hw.gpus else (),
                   [(str(g.index), g.name, format_bytes(g.total_bytes), format_bytes(g.free_bytes),
                     ".".join(str(x) for x in g.compute_capability), "yes" if g.bf16 else "no")
                    for g in hw.gpus])
        disks = self.query_one("#hw-disks", DataTable)
        disks.display = bool(hw.disks)
        fill_table(disks, ("disk", "mounted at", "kind", "free", "size") if hw.disks else (),
                   [(d.device, d.mountpoint, _disk_kind(d) + ("" if d.writable else ", read-only"),
                     format_bytes(d.free_bytes), format_bytes(d.total_bytes)) for d in hw.disks])
        box = self.query_one("#hw-warnings", Vertical)
        box.remove_children()
        notes = ([error] if error else []) + hardware_warnings(hw)
        box.mount_all([Static(f"! {w}", classes="warning", markup=False) for w in notes]
                      or [Static("✓ Nothing to warn about.", classes="ok", markup=False)])

    @work(thread=True, exclusive=True, exit_on_error=False, group="recent-runs",
          description="list live and recent runs")
    def load_recent_runs(self) -> None:
        try:
            from zerotui.core.run.folder import list_runs
            runs = list_runs(wizard_host(self).runs_dir)[:8]
        except Exception:  # noqa: BLE001 - an unreadable runs folder only hides this list
            runs = []
        if not get_current_worker().is_cancelled:
            self.post_message(RecentRunsListed(runs))

    def on_recent_runs_listed(self, message: RecentRunsListed) -> None:
        runs = message.runs
        options = self.query_one("#hw-runs", OptionList)
        options.clear_options()
        for r in runs:
            step = r.status.get("step")
            extra = f", step {step}" if step is not None else ""
            options.add_option(Option(f"{r.name}  [{r.state}{extra}]", id=str(r.paths.root)))
        shown = bool(runs)
        if shown:
            options.highlighted = 0
        options.display = shown
        self.query_one("#hw-runs-title").display = shown

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "hw-runs" and event.option.id:
            from pathlib import Path

            from zerotui.core.run.folder import RunPaths
            self.post_message(OpenRun(RunPaths(Path(event.option.id))))
