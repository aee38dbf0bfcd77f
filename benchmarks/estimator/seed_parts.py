"""The estimator's parts for seed scenarios, with Adam's state made lazily (how runs before
core/train/optimizer_state.py were measured) and at start (zerotui now), under expandable segments:

    python -m benchmarks.estimator.seed_parts 1b-full-ho8 1b-full-ho13
"""
from benchmarks.estimator.margin_rows import components, _seed_shape, GIB
from benchmarks.seed_scenarios.run import SCENARIOS
from zerotui.core.model.spec import _llama_family_spec
from zerotui.core.estimate.margin import first_step_share, room_holes
import sys

for name in sys.argv[1:]:
    shape, fields, _ = SCENARIOS[name]
    spec = _llama_family_spec(f"llama-{shape}", _seed_shape(shape), "x")
    plan = dict(fields, model=f"llama-{shape}", data="sample", name=name)
    for lazy in (True, False):
        c = components(plan, spec, "expandable_segments:True", lazy=lazy)
        t = c["margin_terms"]
        sh = first_step_share(c["step_room"], c["step_new"], room_holes(t))
        print(f"{name:14s} lazy={lazy!s:5} alloc {c['allocated_est']/GIB:6.2f} margin {c['margin_est']/GIB:5.2f} first {t['first step']/GIB:4.2f} share {sh:4.2f} total {(c['allocated_est']+c['margin_est']+c['context'])/GIB:6.2f}")
