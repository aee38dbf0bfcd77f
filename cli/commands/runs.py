"""`zerotui runs [--json] [--all]`: the runs with state, step, loss, the latest eval (perplexity and
ROUGE-L when `zerotui eval` measured it), speed, start and duration."""
from __future__ import annotations

import argparse
import json
import time
from typing import Any

from zerotui.cli.arg_types import folder
from zerotui.core.events.stream import as_float
from zerotui.core.run.overview import eval_figures, latest_eval, latest_progress
from zerotui.core.timefmt import format_duration

DEFAULT_SHOWN = 20  # without --all: live runs plus the newest others, up to this many


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list, one object per run")
    parser.add_argument("--all", action="store_true", help=f"list every run (default: the newest {DEFAULT_SHOWN})")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR", help="where the runs are (default: the user data folder)")


def run_record(summary: Any, now: float) -> dict[str, Any]:
    """What `runs --json` prints for one run: the status the worker last wrote, read back plainly, except
    step, loss and tokens/s, which come together from the run's newest step report (``latest_progress``)."""
    st = summary.status
    started = as_float(st.get("started"))
    beat = as_float(st.get("heartbeat"))
    end = as_float(st.get("finished")) or (now if summary.live else beat)
    # A damaged folder's events may be anything (a FIFO): its row is its status alone.
    step, loss, speed = (latest_progress(summary.paths, st) if summary.state != "damaged"
                         else (st.get("step"), as_float(st.get("loss")), as_float(st.get("tokens_per_s"))))
    rec = {
        "name": summary.name, "path": str(summary.paths.root), "state": summary.state,
        "step": step, "total_steps": st.get("total_steps"), "loss": loss,
        "tokens_per_s": speed, "started": started,
        "duration_s": round(end - started, 1) if started and end else None,
        "heartbeat": beat, "heartbeat_age_s": round(now - beat, 1) if beat else None,
        "pid": st.get("pid"), "phase": st.get("phase"), "reason": st.get("reason"),
        "checkpoint_step": st.get("checkpoint_step"),
        **eval_figures(latest_eval(summary.paths)),
    }
    if summary.state == "damaged":
        rec["note"] = summary.damage
    if summary.state == "lost":
        ram = as_float(st.get("ram_fraction"))
        rec["note"] = (f"host RAM was at {ram:.0%} at the last heartbeat: probably ended by the OOM killer"
                       if ram is not None and ram >= 0.9 else "worker gone without finishing (killed or crashed)")
    return rec


def _eval_cell(rec: dict[str, Any]) -> str:
    """``ppl 12.3`` and ``R-L 0.41`` when measured; the eval loss alone for older streams."""
    parts = []
    if rec.get("perplexity") is not None:
        parts.append(f"ppl {rec['perplexity']:.4g}")
    elif rec.get("eval_loss") is not None:
        parts.append(f"loss {rec['eval_loss']:.4f}")
    if rec.get("rougeL") is not None:
        parts.append(f"R-L {rec['rougeL']:.3f}")
    return " ".join(parts) or "-"


def _state_cell(rec: dict[str, Any]) -> str:
    if rec["state"] == "lost":
        age = rec.get("heartbeat_age_s")
        return f"lost ({format_duration(age)} ago)" if age is not None else "lost"
    return rec["state"]


def run(args: argparse.Namespace) -> int:
    from zerotui.core.paths import default_runs_dir
    from zerotui.core.run.folder import list_runs

    base = args.runs_dir or default_runs_dir()
    if base.exists() and not base.is_dir():  # else "no runs in /etc/passwd", as if it were an empty folder
        from zerotui.core.errors import RunError

        raise RunError(f"the runs folder {base} is not a folder",
                       "give --runs-dir (or ZEROTUI_RUNS_DIR) a folder; the default is the user data folder")
    runs = list_runs(base)
    if not args.all and len(runs) > DEFAULT_SHOWN:
        live = [r for r in runs if r.live]
        rest = [r for r in runs if not r.live][: max(0, DEFAULT_SHOWN - len(live))]
        hidden = len(runs) - len(live) - len(rest)
        runs = [r for r in runs if r in live or r in rest]
    else:
        hidden = 0
    now = time.time()
    records = [run_record(r, now) for r in runs]
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    if not records:
        print(f"no runs in {base} (start one with `zerotui train PRESET`)")
        return 0
    from zerotui.core.safe_read import printable

    rows = [("RUN", "STATE", "STEP", "LOSS", "EVAL", "TOK/S", "STARTED", "DURATION")]
    for rec in records:
        step = "-" if rec["step"] is None else str(rec["step"])
        if rec["total_steps"]:
            step += f"/{rec['total_steps']}"
        rows.append((
            printable(rec["name"]), _state_cell(rec), step,
            "-" if rec["loss"] is None else f"{rec['loss']:.4f}",
            _eval_cell(rec),
            "-" if rec["tokens_per_s"] is None else f"{rec['tokens_per_s']:,.0f}",
            time.strftime("%Y-%m-%d %H:%M", time.localtime(rec["started"])) if rec["started"] else "-",
            format_duration(rec["duration_s"]),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    for rec in records:  # a name or a reason from a tampered folder must not write to the terminal
        name = printable(rec["name"])
        if rec["state"] == "failed" and rec.get("reason"):
            print(f"  {name}: {printable(str(rec['reason']))}")
        elif rec["state"] == "lost":
            print(f"  {name}: {printable(str(rec['note']))}; `zerotui resume {name}` continues it")
        elif rec["state"] == "damaged":
            print(f"  {name}: {printable(str(rec['note']))}; restore or delete that file")
    if hidden:
        print(f"({hidden} older runs not shown; --all lists them)")
    return 0
