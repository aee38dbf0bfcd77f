"""zerotui's headless core: planning, estimating, configuring and running DeepSpeed fine-tunes.

Read it in the order data flows (docs/architecture.md has the long form):

    plan/ -> model/, data/, hardware/ -> deepspeed/ -> estimate/ -> train/ -> run/ -> events/ (read back)
                                                                  export/, doctor/ on top

Base modules every package may import: ``errors`` (typed errors), ``atomic`` (whole-or-nothing writes),
``sizes`` (byte sizes), ``timefmt`` (durations and rates), ``paths`` (where zerotui keeps things).

Nothing here imports textual, rich, ``zerotui.tui`` or ``zerotui.cli``; the layers are import-linter
contracts in pyproject.toml, checked by ``lint-imports`` in CI.
"""
