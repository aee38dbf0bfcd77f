"""A footer that fits its terminal: the keys that do not fit are left out whole, never cut in the middle.

Textual's Footer lays every shown binding out in a row and the terminal's edge cuts the last ones (at
120 columns the dashboard's read ``r Runs  ^q Qu▏``, at 80 the review lost Export and Help). This one
first tries Textual's compact style, then drops the least important keys until the rest fit (a screen
shows few enough keys that, at 80 columns, none is dropped: tests/tui/test_footer_text.py). Help is
always kept: the help screen lists every key, so whatever the footer leaves out is one key away. A screen
names its most important actions, first to keep, in ``FOOTER_KEEP``; actions it does not name go first,
from the right.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # Textual exports no public name for it

#: Actions never dropped: the way to every other key.
ALWAYS = ("help", "app.help")
#: Dropped after every screen key: quitting is also ctrl+q from anywhere, listed in the help.
LATE = ("quit", "app.quit")


def key_width(key: FooterKey, compact: bool) -> int:
    """Cells one entry takes, from Textual's Footer CSS: key padding 0 1 and description padding 0 1 0 0,
    or, compact, no key padding, a space before the description and a margin of 1 after it."""
    text = len(key.key_display) + (len(key.description) + 1 if key.description else 0)
    return text + (1 if compact else 2)


def palette_width(palette: list[FooterKey], compact: bool) -> int:
    """The command palette's entry, docked right: its key and description in Textual's compact style
    (its own default), a border-left of 1 and, unless the footer is compact, a padding-right of 1."""
    return sum(len(p.key_display) + 1 + len(p.description) + (1 if compact else 2) for p in palette)


class FitFooter(Footer):
    DEFAULT_CSS = """
    FitFooter { overflow-x: hidden; }
    """

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey) and not w.has_class("-command-palette")]
        palette = [w for w in widgets if w.has_class("-command-palette")]
        other = [w for w in widgets if w not in keys and w not in palette]
        if other:  # binding groups (none of ours use them): leave Textual's layout alone
            yield from widgets
            return
        width = self.app.size.width
        minor, named = self._drop_order(keys)
        roomy, tight = width - palette_width(palette, False), width - palette_width(palette, True)
        # Every key, roomy or else compact: a key left out is worse than one cell less between keys. Only
        # when even compact cannot hold them all, the least important go (roomy if that is then enough).
        shown, compact = self._fit(keys, [], roomy, compact=False), False
        if shown is None:
            shown, compact = self._fit(keys, [], tight, compact=True), True
        if shown is None:
            shown, compact = self._fit(keys, minor, roomy, compact=False), False
        if shown is None:
            shown, compact = (self._fit(keys, minor + named, tight, compact=True)
                              or {k for k in keys if k.action in ALWAYS}), True
        self.compact = compact  # the keys are data-bound to it (Textual's compose)
        yield from (k for k in keys if k in shown)
        yield from palette

    @staticmethod
    def _fit(keys: list[FooterKey], droppable: list[FooterKey], room: int, compact: bool) -> set[FooterKey] | None:
        """The keys left after dropping ``droppable`` in order until the rest fit; None if they never do."""
        shown = set(keys)
        used = sum(key_width(k, compact) for k in keys)
        for k in droppable:
            if used <= room:
                break
            shown.discard(k)
            used -= key_width(k, compact)
        return shown if used <= room else None

    def _drop_order(self, keys: list[FooterKey]) -> tuple[list[FooterKey], list[FooterKey]]:
        """Least important first: (the keys the screen did not name, from the right, then quit;
        FOOTER_KEEP's keys from its end). Help is in neither: it is never dropped."""
        keep = list(getattr(self.screen, "FOOTER_KEEP", ()))
        unnamed = [k for k in reversed(keys) if k.action not in keep + list(LATE + ALWAYS)]
        late = [k for k in keys if k.action in LATE]
        named = sorted((k for k in keys if k.action in keep), key=lambda k: -keep.index(k.action))
        return unnamed + late, named

    def on_resize(self) -> None:
        # Which keys fit depends on the width: lay them out again (Textual's own Footer never needs to).
        if self.is_attached and self._bindings_ready:
            self.call_after_refresh(self.recompose)
