"""The sweep screen on a study of six trials (tests/helpers/sweep_fixture.py): screenshots/sweep.svg, and
sweep.png (cairosvg or rsvg-convert, else headless Chromium renders the SVG).

    python screenshots/make_sweep_screenshot.py
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "helpers"))
sys.path.insert(0, str(HERE))


async def take(out: Path) -> Path:
    from sweep_fixture import make_sweep, sweep_host, until_read


    tmp = Path(tempfile.mkdtemp(prefix="zt-sweepshot-"))
    paths = make_sweep(tmp / "sweeps" / "20261201-120000-demo", tmp / "runs")

    app = sweep_host(paths)
    async with app.run_test(size=(140, 40)) as pilot:
        await until_read(app, pilot, settle_s=0.5)
        app.save_screenshot(filename="sweep.svg", path=str(out))
    return out / "sweep.svg"


def main() -> int:
    from make_screenshots import to_png

    svg = asyncio.run(take(HERE))
    png = svg.with_suffix(".png")
    why = to_png(svg, png)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if why and browser:
        subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", f"--screenshot={png}",
                        "--window-size=1720,1010", "--hide-scrollbars", svg.as_uri()], check=True,
                       capture_output=True, timeout=120)
        why = None
    print(f"{svg}" + (f" (no PNG: {why})" if why else f" + {png.name}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
