"""The dashboard's layout rules: a grid on large terminals, one pane at a time (tabs) on small ones.

Wide (≥ 120×32)::

    ┌ run ─────┬ loss ─────────────┬ fp16 loss scale ─┐   bf16/fp32 runs: no scale pane,
    │          │                   │                  │   loss spans both columns
    ├ log ─────┼ GPU util % ───────┴ GPU memory ──────┤
    │          │                                      │   during start-up the phases pane
    │          ├ throughput ───────┬ host ────────────┤   takes the place of the charts
    │          │                   │                  │
    └──────────┴───────────────────┴──────────────────┘

The run / log column is 46 cells up to ~150 columns, then 28 % of the width (the log wraps less).

Narrow (80×24): a tab strip (keys 1-7, or ←/→ on the tabs) and the active pane below it.
"""

DASHBOARD_CSS = """
DashboardScreen { layout: vertical; }
#dash-status { height: 1; padding: 0 1; background: $panel; }
#dash-banner { height: auto; max-height: 3; padding: 0 1; display: none; }
#dash-banner.-ok { background: $success 30%; }
#dash-banner.-warn { background: $warning 30%; }
#dash-banner.-error { background: $error 40%; text-style: bold; }
#dash-progress { height: 1; padding: 0 1; }
#dash-bar { width: auto; }
#dash-bar Bar { width: 30; }
#dash-eta { width: 1fr; padding: 0 0 0 2; }
#dash-tabs { display: none; }
#dash-body { height: 1fr; }
.pane { border: round $primary 50%; border-title-color: $text; border-subtitle-color: $text-muted; }
.chart.-alert, .pane.-alert { border: heavy $error; }
#pane-gpu { layout: horizontal; border: none; }
#chart-gpu-util, #chart-gpu-mem {
    border: round $primary 50%; border-title-color: $text; border-subtitle-color: $text-muted;
}
#pane-phases { display: none; }
DashboardScreen.-startup .pane.chart, DashboardScreen.-startup #pane-gpu { display: none; }
DashboardScreen.-startup #pane-phases { display: block; }
/* wide: a bf16/fp32 run has no scale pane; narrow: its tab says why it is empty (LossScaleChart) */
DashboardScreen.-wide.-no-scale #chart-scale { display: none; }

/* -- wide: everything at once ------------------------------------------------------------- */
DashboardScreen.-wide #dash-body {
    layout: grid;
    grid-size: 3 3;
    grid-columns: 46 1fr 1fr;  /* the first column grows on large terminals: screen.py, _layout */
    grid-rows: 1fr 1fr 1fr;
}
DashboardScreen.-wide #pane-stats { height: 1fr; }
DashboardScreen.-wide #pane-log { row-span: 2; }
DashboardScreen.-wide #pane-gpu { column-span: 2; }
DashboardScreen.-wide.-no-scale #chart-loss { column-span: 2; }
DashboardScreen.-wide #pane-phases { column-span: 2; row-span: 3; }

/* -- narrow: tabs, one pane --------------------------------------------------------------- */
DashboardScreen.-narrow #dash-tabs { display: block; }
DashboardScreen.-narrow #dash-body { layout: vertical; }
DashboardScreen.-narrow .pane { display: none; height: 1fr; }
DashboardScreen.-narrow .pane.-active { display: block; }
DashboardScreen.-narrow #pane-gpu.-active { layout: vertical; }
DashboardScreen.-narrow.-startup .pane.chart.-active, DashboardScreen.-narrow.-startup #pane-gpu.-active { display: none; }
DashboardScreen.-narrow.-startup #pane-phases { display: none; }
DashboardScreen.-narrow.-startup #pane-phases.-active { display: block; }
"""
