"""Regenerate an SVG and a PNG of every screen: ``python screenshots/make_screenshots.py [NAME ...]``.

Each entry of ``SHOTS`` builds an app on fixed fake hardware, drives it with Pilot (the same keys a person
would press) and saves ``screenshots/<name>.svg`` and ``<name>.png``. To add a screen (the dashboard,
say), append a ``Shot`` with a ``drive`` coroutine; ``make_app`` defaults to the wizard on the 24 GB
workstation. PNGs need cairosvg (``pip install cairosvg``; it uses the system's libcairo) or
``rsvg-convert``; without either only the SVGs are written, and the script says so.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Fixed places, so the launch command and run folder in the pictures do not depend on who ran it.
RUNS_DIR = Path("/tmp/zerotui-screenshots/runs")


def wizard_app(hardware: str = "workstation", preset: str | None = None):
    from zerotui.tui.app import ZeroTuiApp
    from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb

    hw = workstation_24gb() if hardware == "workstation" else cpu_only()
    return ZeroTuiApp(hardware=hw, preset=preset, runs_dir=RUNS_DIR)


async def settle(pilot) -> None:
    """Let workers (estimate, previews) finish and the screen repaint; drop transient toasts."""
    # Not workers.wait_for_complete(): it raises for a worker that an exclusive newer one cancelled.
    from textual.worker import WorkerState

    for _ in range(500):  # at most ~10 s
        await pilot.pause(0.02)
        if not any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in pilot.app.workers):
            break
    await pilot.pause(0.02)
    pilot.app.clear_notifications()
    await pilot.pause(0.05)


async def keys(pilot, *presses: str) -> None:
    for key in presses:
        await pilot.press(key)
        await settle(pilot)


@dataclass
class Shot:
    name: str
    drive: Callable[..., Awaitable[None]]
    make_app: Callable[[], object] = field(default=wizard_app)
    size: tuple[int, int] = (120, 40)
    caption: str = ""


async def _nothing(pilot) -> None:
    await settle(pilot)


def _step(*presses: str) -> Callable[..., Awaitable[None]]:
    async def drive(pilot) -> None:
        await settle(pilot)
        await keys(pilot, *presses)
    return drive


async def _fit(pilot) -> None:
    """7B, full fine-tune, stage 2, no offload (red on 24 GB), then Fit."""
    await settle(pilot)
    await keys(pilot, "n")
    app = pilot.app
    app.apply_plan(app.state.plan.with_changes(model="llama-2-7b", stage=2))  # type: ignore[attr-defined]
    await settle(pilot)
    await keys(pilot, "ctrl+g")


def _preset_review(name: str) -> Callable[[], object]:
    return lambda: wizard_app(preset=name)


#: A data path that does not exist (the same on every machine): the wizard's inline error and blocked Launch.
BAD_DATA = "/data/train-typo.jsonl"


async def _bad_data(pilot, review: bool = False) -> None:
    """Step 2 with a data path that does not exist, typed key by key; then (review=True) the review."""
    from zerotui.tui.wizard.field_help import control_id

    await settle(pilot)
    await keys(pilot, "n", "ctrl+n")
    box = pilot.app.screen.query_one(f"#{control_id('data')}")
    box.focus()
    await pilot.press("home", "ctrl+k", *list(BAD_DATA))
    await pilot.pause(0.5)  # the preview waits for a pause in typing
    await settle(pilot)
    if review:
        await keys(pilot, "ctrl+r")
        pilot.app.screen.query_one("#form").scroll_home(animate=False)
        await settle(pilot)


async def _bad_data_review(pilot) -> None:
    await _bad_data(pilot, review=True)


async def _error_modal(pilot) -> None:
    """The modal a launch that fails to start shows (here: the runs folder cannot be written)."""
    from zerotui.tui.common.error_modal import ErrorScreen

    await settle(pilot)
    pilot.app.push_screen(ErrorScreen(
        "The run could not start", "the runs folder /srv/zerotui/runs is not writable (Permission denied)",
        "choose another with --runs-dir or ZEROTUI_RUNS_DIR"))
    await settle(pilot)


SHOTS: list[Shot] = [
    Shot("hardware", _nothing, caption="First screen: what the machine has, in plain words"),
    Shot("hardware-cpu-only", _nothing, make_app=lambda: wizard_app("cpu"), caption="No GPU: the CPU demo"),
    Shot("step-1-model", _step("n"), caption="Model: tiny, HF cache, known architectures, a folder"),
    Shot("step-2-data-method", _step("n", "ctrl+n"), caption="Data preview and method"),
    Shot("step-3-precision", _step("n", "ctrl+n", "ctrl+n"), caption="Precision, unsupported choices disabled"),
    Shot("step-4-zero-offload", _step("n", "ctrl+n", "ctrl+n", "ctrl+n"), caption="ZeRO stage and offload"),
    Shot("step-5-review", _step("n", "ctrl+r"), caption="Review: plan in words, ds_config, command"),
    Shot("review-7b-zero3-offload", _nothing, make_app=_preset_review("llama7b-24gb-zero3-cpu"),
         caption="The 24 GB / 7B / ZeRO-3 offload preset"),
    Shot("budget-breakdown", _step("n", "ctrl+n", "ctrl+n", "ctrl+n", "b"), caption="The expanded breakdown"),
    Shot("help", _step("n", "f1"), caption="Help (? or F1)"),
    Shot("hardware-80x24", _nothing, size=(80, 24), caption="Readable at 80×24"),
    Shot("step-4-zero-offload-80x24", _step("n", "ctrl+n", "ctrl+n", "ctrl+n"), size=(80, 24),
         caption="The smallest terminal it is designed for"),
    Shot("review-7b-200x50", _nothing, make_app=_preset_review("llama7b-24gb-zero3-cpu"), size=(200, 50),
         caption="Good at 200×50"),
    Shot("fit", _fit, caption="Fit: a 7B full fine-tune without offload turned into a plan that fits"),
    Shot("preset-picker", _step("p"), caption="From a preset (p): built-in and saved presets"),
    Shot("save-preset", _step("s"), make_app=_preset_review("llama7b-24gb-zero3-cpu"),
         caption="Save preset (s): never overwrites silently"),
    Shot("export", _step("e"), make_app=_preset_review("llama7b-24gb-zero3-cpu"),
         caption="Export (e): ds_config.json, plan.yaml and launch.sh for the plain deepspeed launcher"),
    Shot("step-2-bad-data", _bad_data, caption="A data file that does not exist: the error on the field itself"),
    Shot("review-blocked-bad-data", _bad_data_review,
         caption="The same plan on the review: Launch disabled, with the reason"),
    Shot("error-modal", _error_modal, caption="A run that cannot start: what went wrong and what would work"),
]


def to_png(svg: Path, png: Path) -> str | None:
    """Write the PNG; returns None on success or the reason it could not."""
    try:
        import cairosvg
    except ImportError:
        cairosvg = None
    if cairosvg is not None:
        cairosvg.svg2png(url=str(svg), write_to=str(png), output_width=1600)
        return None
    tool = shutil.which("rsvg-convert")
    if tool:
        subprocess.run([tool, "-w", "1600", "-o", str(png), str(svg)], check=True)
        return None
    return "no SVG renderer: pip install cairosvg (or install rsvg-convert) for PNGs"


async def take(shot: Shot, out: Path) -> Path:
    app = shot.make_app()
    async with app.run_test(size=shot.size) as pilot:  # type: ignore[attr-defined]
        await shot.drive(pilot)
        svg = out / f"{shot.name}.svg"
        app.save_screenshot(filename=svg.name, path=str(out))  # type: ignore[attr-defined]
    return svg


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these shots (default: all)")
    parser.add_argument("-o", "--out", type=Path, default=HERE, help="output folder (default: screenshots/)")
    args = parser.parse_args(argv)
    chosen = [s for s in SHOTS if not args.names or s.name in args.names]
    unknown = set(args.names) - {s.name for s in SHOTS}
    if unknown:
        print(f"unknown shot(s): {', '.join(sorted(unknown))}; known: {', '.join(s.name for s in SHOTS)}",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    # A private presets folder, so saved presets on this machine never show up in the pictures.
    os.environ.setdefault("ZEROTUI_PRESETS_DIR", tempfile.mkdtemp(prefix="zerotui-shots-presets-"))
    os.environ.setdefault("HF_HUB_CACHE", tempfile.mkdtemp(prefix="zerotui-shots-hf-"))
    pngs = True
    for shot in chosen:
        svg = asyncio.run(take(shot, args.out))
        why = to_png(svg, svg.with_suffix(".png"))
        pngs = pngs and not why
        print(f"{svg}" + (f" (PNG skipped: {why})" if why else f" + {svg.with_suffix('.png').name}"))
    if not args.names:
        write_index(args.out, ".png" if pngs else ".svg")
    return 0


#: Pictures that other scripts make, kept in the index whichever script writes it: (name, size, caption,
#: the file's extension or None for the one the index uses).
MADE_ELSEWHERE: list[tuple[str, str, str, str | None]] = [
    ("serve-chromium", "headless Chromium, 1500×950",
     ("`zerotui serve` (read-only) on a live tiny-cpu-demo run, as headless Chromium renders it\n"
      "(`python screenshots/make_browser_screenshot.py`)"), ".png"),
    ("sweep", "140×40",
     ("`zerotui sweep --watch`: the trials of a sweep, the best so far, the eval loss per trial\n"
      "(`python screenshots/make_sweep_screenshot.py`, a study of six trials from tests/helpers/sweep_fixture.py)"),
     None),
]


def all_shots() -> list[tuple[str, str, str, str | None]]:
    """(name, size, caption, extension) of every picture: the wizard's (SHOTS), the dashboard's
    (make_dashboard_screenshots.SHOTS) and those of the other scripts (MADE_ELSEWHERE), so the index lists
    them all whichever script wrote it last."""
    sys.path.insert(0, str(HERE))
    from make_dashboard_screenshots import SHOTS as DASHBOARD

    return ([(s.name, f"{s.size[0]}×{s.size[1]}", s.caption, None) for s in SHOTS]
            + [(n, f"{v[1][0]}×{v[1][1]}", v[3], None) for n, v in DASHBOARD.items()] + MADE_ELSEWHERE)


def write_index(out: Path, ext: str) -> None:
    """screenshots/README.md: every picture with its caption, wizard first, then dashboard and runs."""
    lines = ["# Screenshots", "",
             ("Regenerate with `python screenshots/make_screenshots.py` (the wizard: fake hardware, fixed numbers) "
              "and `python screenshots/make_dashboard_screenshots.py` (the dashboard and the runs screen: recorded "
              "runs from tests/fixtures/events, a frozen clock). Each writes an SVG and a PNG per screen and this "
              "index."), ""]
    for name, size, caption, own_ext in all_shots():
        lines += [f"## {name} ({size})", "", caption or "", "", f"![{name}]({name}{own_ext or ext})", ""]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
