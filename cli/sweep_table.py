"""`zerotui sweep --show`: a sweep's trials as a table (or JSON), read from its study and status."""
from __future__ import annotations

import json
from typing import Any


def show(paths: Any, as_json: bool) -> int:
    from zerotui.core.sweep.report import progress, summary, trial_cells

    s = summary(paths)
    if as_json:
        print(json.dumps(s, indent=1))
        return 0
    best = s["best"]
    print(f"sweep {s['sweep']}: {s['state']}, {progress(s)}"
          + (f"; best: trial {best['number']}, eval loss {best['value']:.4g}" if best else ""))
    for t in s["trials"]:
        number, state, value, values, where = trial_cells(t)
        print(f"  {number:<4} {state:<9} {value:>10}  {values}  {where}")
        for w in t.get("warnings") or ():  # the launch's warnings: otherwise only in the run's worker.log
            print(f"       warning: {w}")
    unfinished = any(t["state"] in ("running", "stopped") or t.get("orphaned") for t in s["trials"])
    # Trials whose driver is gone (kill -9, a reboot) wait for a driver whatever the sweep's last word was.
    if (s["state"] in ("stopped", "lost") and (unfinished or len(s["trials"]) < s["trials_wanted"])) \
            or s.get("orphaned"):
        print(f"continue with `zerotui sweep --resume {s['sweep']}`"
              + (" (its stopped or lost trials resume from their newest checkpoint)"
                 if s["stopped"] or any(t.get("orphaned") and t["state"] in ("stopped", "lost") for t in s["trials"])
                 else ""))
    if s["preset"]:
        print(f"best plan saved as preset: {s['preset']}")
    if s["overhead_s_median"] is not None:
        print(f"sweep overhead per trial beyond its run: {s['overhead_s_median']:.1f} s (median)")
    return 0
