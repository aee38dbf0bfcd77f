"""`zerotui sweep --show`: a sweep's trials as a table (or JSON), read from its study and status."""
from __future__ import annotations

import json
from typing import Any


def show(paths: Any, as_json: bool) -> int:
    from zerotui.core.sweep.report import summary

    s = summary(paths)
    if as_json:
        print(json.dumps(s, indent=1))
        return 0
    best = s["best"]
    print(f"sweep {s['sweep']}: {s['state']}, {sum(t['state'] != 'running' for t in s['trials'])} of "
          f"{s['trials_wanted']} trials done" + (f"; best: trial {best['number']}, eval loss {best['value']:.4g}"
                                                 if best else ""))
    for t in s["trials"]:
        value = f"{t['value']:.4g}" if t["value"] is not None else "-"
        values = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in t["values"].items())
        print(f"  t{t['number']:<3} {t['state']:<9} {value:>8}  {values}  {t['run'] or t['error'] or ''}")
    if s["preset"]:
        print(f"best plan saved as preset: {s['preset']}")
    if s["overhead_s_median"] is not None:
        print(f"sweep overhead per trial beyond its run: {s['overhead_s_median']:.1f} s (median)")
    return 0
