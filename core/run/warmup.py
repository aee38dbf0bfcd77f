"""Getting the machine ready for a first launch while the user is still planning (the wizard calls this
as it opens): DeepSpeed's ops compile (core/deepspeed/prebuild.py) and a spare worker imports torch,
DeepSpeed and transformers (core/run/spare.py), each on its own thread or process."""
from __future__ import annotations

from zerotui.core.deepspeed import prebuild
from zerotui.core.run import spare


def warm_up_in_background() -> None:
    prebuild.start_in_background()
    spare.start_in_background()
