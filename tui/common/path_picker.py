"""A modal folder/file picker: a directory tree plus a path box, usable by keyboard or mouse.

Returns the chosen ``Path`` (or None on Escape) through ``dismiss``. ``want="dir"`` picks folders (a
model folder, the NVMe swap folder), ``want="file"`` picks files (a dataset). Typing a path and Enter
re-roots the tree at a folder or chooses a file; "Up" climbs to the parent.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Literal, Optional

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DirectoryTree, Input, Label, Static

from zerotui.tui.common.ordered_input import OrderedInput


class QuietDirectoryTree(DirectoryTree):
    """Hides dot-files; in folder mode hides files too, so the tree stays short."""

    def __init__(self, path: Path, dirs_only: bool, suffixes: tuple[str, ...] = (), **kw) -> None:
        super().__init__(path, **kw)
        self.dirs_only = dirs_only
        self.suffixes = suffixes

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        out = []
        for p in paths:
            if p.name.startswith("."):
                continue
            try:
                is_dir = p.is_dir()
            except OSError:
                continue
            if is_dir or (not self.dirs_only and (not self.suffixes or p.suffix.lower() in self.suffixes)):
                out.append(p)
        return out


def _start_dir(start: Optional[Path]) -> Path:
    p = (start or Path.cwd()).expanduser()
    while not p.is_dir() and p != p.parent:
        p = p.parent
    return p if p.is_dir() else Path.home()


class PathPickerScreen(ModalScreen[Optional[Path]]):
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("backspace", "up", "Up", show=False)]

    def __init__(self, title: str, want: Literal["dir", "file"] = "dir", start: Optional[Path] = None,
                 suffixes: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.title_text = title
        self.want = want
        self.root = _start_dir(start)
        self.suffixes = suffixes
        self.selected: Optional[Path] = start if start and start.exists() else None

    def compose(self) -> ComposeResult:
        with Vertical(id="picker", classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield OrderedInput(str(self.selected or self.root), id="picker-path",
                        placeholder="type a path and press Enter")
            yield QuietDirectoryTree(self.root, self.want == "dir", self.suffixes, id="picker-tree")
            yield Static("", id="picker-note", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Up", id="picker-up", compact=True)
                yield Button("Choose", id="picker-choose", variant="primary", compact=True)
                yield Button("Cancel", id="picker-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#picker-tree").focus()
        self._note()

    def _note(self) -> None:
        p = self.selected
        note = ""
        if p is not None:
            try:
                import shutil
                usage = shutil.disk_usage(p if p.is_dir() else p.parent)
                note = f"{usage.free / (1 << 30):.1f} GiB free on this disk"
            except OSError as err:
                note = f"cannot read this path: {err.strerror}"
        self.query_one("#picker-note", Static).update(note)

    def _reroot(self, path: Path) -> None:
        self.root = path
        tree = self.query_one("#picker-tree", QuietDirectoryTree)
        tree.path = path
        self.selected = path if self.want == "dir" else None
        self.query_one("#picker-path", Input).value = str(path)
        self._note()

    def on_directory_tree_directory_selected(self, event: DirectoryTree.DirectorySelected) -> None:
        event.stop()
        self.selected = event.path
        self.query_one("#picker-path", Input).value = str(event.path)
        self._note()

    def on_directory_tree_file_selected(self, event: DirectoryTree.FileSelected) -> None:
        event.stop()
        self.selected = event.path
        self.query_one("#picker-path", Input).value = str(event.path)
        self._note()
        if self.want == "file":
            self.dismiss(event.path)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        p = Path(event.value.strip()).expanduser()
        if p.is_dir():
            if self.want == "dir" and p == self.selected:
                self.dismiss(p)
            else:
                self._reroot(p)
        elif p.is_file() and self.want == "file":
            self.dismiss(p)
        else:
            kind = "folder" if self.want == "dir" else "file"
            self.query_one("#picker-note", Static).update(f"✗ {p}: no such {kind}")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "picker-up":
            self.action_up()
        elif event.button.id == "picker-choose":
            self.action_choose()
        else:
            self.dismiss(None)

    def action_up(self) -> None:
        if self.focused is not None and isinstance(self.focused, Input):
            return  # backspace edits the path box
        self._reroot(self.root.parent)

    def action_choose(self) -> None:
        p = Path(self.query_one("#picker-path", Input).value.strip()).expanduser()
        ok = p.is_dir() if self.want == "dir" else p.is_file()
        if ok:
            self.dismiss(p)
        else:
            self.query_one("#picker-note", Static).update(
                f"✗ pick a {'folder' if self.want == 'dir' else 'file'} first")

    def action_cancel(self) -> None:
        self.dismiss(None)
