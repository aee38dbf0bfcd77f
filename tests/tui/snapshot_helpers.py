"""Wait for the picture to stop changing before a snapshot is taken.

Some widgets finish their layout one or two refreshes after the message that changed them: a DataTable
measures its new rows only when it next goes idle, and then asks its parent for a new layout. On a busy
machine the snapshot could catch the frame in between (CI did, once: the dataset preview's note was
drawn and its table of rows was not yet). Comparing whole frames covers every such widget, not just the
ones we know about.
"""
from __future__ import annotations

#: Identical frames in a row that count as settled, and the most pauses to wait for them (~5 s).
SAME_FRAMES = 3
MAX_PAUSES = 100


async def steady_frame(pilot, pause_s: float = 0.05) -> None:
    """Pause until ``SAME_FRAMES`` consecutive screenshots are identical; fail if they never are.

    A focused Input's cursor blinks every 0.5 s: three equal frames 50 ms apart can catch it shown or
    hidden, and a snapshot then differs only in the cursor's style (seen once in a full run). The blink is
    turned off first, which leaves the cursor shown."""
    from textual.widgets import Input

    for screen in pilot.app.screen_stack:
        for box in screen.query(Input):
            box.cursor_blink = False
    previous, same = None, 0
    for _ in range(MAX_PAUSES):
        await pilot.pause(pause_s)
        frame = pilot.app.export_screenshot()
        same = same + 1 if frame == previous else 1
        if same >= SAME_FRAMES:
            return
        previous = frame
    raise AssertionError(f"the screen kept changing for {MAX_PAUSES} pauses of {pause_s} s: "
                         "something animates or redraws forever")
