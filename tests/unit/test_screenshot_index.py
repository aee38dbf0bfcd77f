"""screenshots/make_screenshots.py's write_index rewrites screenshots/README.md from its own lists: it must
keep every picture the README shows, those made by the other scripts (serve-chromium, sweep) too, and
link only pictures that exist."""
from __future__ import annotations

import re
import sys
from pathlib import Path

SHOTS = Path(__file__).resolve().parents[2] / "screenshots"


def _headings(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, flags=re.MULTILINE)


def test_the_rewritten_index_keeps_every_picture_and_links_only_real_files(tmp_path):
    sys.path.insert(0, str(SHOTS))
    from make_screenshots import write_index

    write_index(tmp_path, ".png")
    written = (tmp_path / "README.md").read_text(encoding="utf-8")
    kept = (SHOTS / "README.md").read_text(encoding="utf-8")
    assert _headings(written) == _headings(kept)
    assert {"serve-chromium (headless Chromium, 1500×950)", "sweep (140×40)"} <= set(_headings(written))
    links = re.findall(r"^!\[[^]]*\]\(([^)]+)\)$", written, flags=re.MULTILINE)
    assert len(links) == len(_headings(written))
    assert [name for name in links if not (SHOTS / name).is_file()] == []
    write_index(tmp_path, ".svg")  # the SVG index: serve-chromium has only a PNG and keeps it
    assert "![serve-chromium](serve-chromium.png)" in (tmp_path / "README.md").read_text(encoding="utf-8")
