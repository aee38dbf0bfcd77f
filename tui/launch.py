"""Entry points the CLI calls: the wizard (``zerotui``, ``zerotui --preset NAME``) and the dashboard on
one run (``zerotui attach RUN``). Imports stay inside the functions so ``zerotui doctor`` never pays for
Textual."""
from __future__ import annotations

from typing import Any, Optional


def run_wizard(preset: Optional[str] = None) -> int:
    from zerotui.tui.app import ZeroTuiApp

    app = ZeroTuiApp(preset=preset)
    app.run()
    return int(app.return_code or 0)


def run_attach(paths: Any) -> int:
    from zerotui.tui.app import ZeroTuiApp

    app = ZeroTuiApp(attach=paths)
    app.run()
    return int(app.return_code or 0)
