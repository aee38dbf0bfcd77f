"""An Input that applies every key in the order it was typed, however fast the keys arrive.

Why: Textual's Input inserts a printable key in its own ``_on_key``, but its editing keys (backspace,
left, home, ctrl+k...) and the keys bound further up (tab, escape) are bindings, and the App checks
non-priority bindings only once the Key event has bubbled back up to it, one message queue per ancestor
(Textual issue #6605). A wizard field sits six containers deep; over SSH keys come in bursts, so the
App has already handed the next characters to the Input before the backspace gets back to it:
``512`` + backspace ×3 + ``99`` became ``51`` (the 9s typed first, then two deletes), and a plan changed
without anyone seeing it. Here the bindings run inline, in the Input's own turn, exactly as the App
would resolve them (the focused widget first, then its ancestors, then the App); a key that reaches
an Input no longer focused (a tab moved focus while later keys were queued behind it) goes on to the
widget that now has focus, as it would have had the App dispatched it a moment later.
"""
from __future__ import annotations

from textual import events
from textual.widgets import Input


class OrderedInput(Input):
    async def _on_key(self, event: events.Key) -> None:
        app = self.app
        if app.focused is not self:
            # Queued here before focus moved: deliver it where the user's focus is now.
            event.stop()
            event.prevent_default()
            target = app.focused or app.screen
            if target is not self:
                target.post_message(events.Key(event.key, event.character))
            return
        await super()._on_key(event)  # printable characters: inserted and stopped here
        if event.is_printable:
            return
        check = getattr(app, "_check_bindings", None)  # the App's own resolution (Textual >= 0.x)
        if check is not None and await check(event.key):
            event.stop()
            event.prevent_default()
