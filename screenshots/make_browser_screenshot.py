"""The dashboard served by `zerotui serve`, as headless Chromium shows it: screenshots/serve-chromium.png.

    python screenshots/make_browser_screenshot.py

Trains the tiny-cpu-demo preset for real (a throw-away runs folder), serves it read-only, opens it in
headless Chromium over the DevTools protocol (tests/helpers/browser.py) and captures the page once the
run has logged a few steps.
"""
from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "helpers"))
from browser import Browser, free_port  # noqa: E402


def main() -> int:
    runs = Path(tempfile.mkdtemp(prefix="zt-shot-"))
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(runs))
    subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", "tiny-cpu-demo", "--max-steps", "400",
                    "--log-interval", "2"], env=env, check=True, capture_output=True)
    deadline = time.time() + 300
    while time.time() < deadline and sum(p.read_text().count('"step"') for p in runs.glob("*/events.jsonl")) < 8:
        time.sleep(1)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "zerotui.cli.main", "serve", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    browser = Browser(1500, 950)
    try:
        async def script(b, send):
            await send("Network.enable")
            await send("Page.enable")
            for _ in range(100):
                try:
                    await send("Page.navigate", url=f"http://127.0.0.1:{port}/")
                    break
                except Exception:  # noqa: BLE001 - the server is still starting
                    await asyncio.sleep(0.3)
            await asyncio.sleep(15)
            shot = await send("Page.captureScreenshot", format="png")
            return base64.b64decode(shot["result"]["data"])

        png = asyncio.run(browser.run(script))
        (HERE / "serve-chromium.png").write_bytes(png)
        print(f"wrote {HERE / 'serve-chromium.png'} ({len(png)} bytes)")
    finally:
        browser.close()
        server.terminate()
        for run in runs.iterdir():  # the run was only there to be looked at
            subprocess.run([sys.executable, "-m", "zerotui.cli.main", "stop", run.name, "--now"], env=env,
                           capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
