"""`zerotui serve` in a real headless Chromium: the page loads and shows the live run's step advancing;
a control is refused without --allow-control (and the run goes on); off localhost, no token, no page.
"""
from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time

import pytest
from browser import Browser, chromium, free_port
from run_events import events, wait_until
from worker_runs import kill_run, make_run, start_worker

from zerotui.core.run.folder import read_status


def _serve(paths, port, *extra):
    return subprocess.Popen([sys.executable, "-m", "zerotui.cli.main", "serve", str(paths.root), "--port", str(port),
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_listening(port: int, timeout: float = 60) -> None:
    import socket

    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on {port}")


def _steps_on(screen: str) -> list[int]:
    return [int(m) for m in re.findall(r"step\s+(\d+)", screen)]


@pytest.mark.skipif(chromium() is None, reason="no headless Chromium: `scripts/setup.sh --test` installs "
                                                "Debian's chromium with apt (it needs root or sudo)")
def test_the_served_dashboard_shows_the_run_advancing_and_refuses_control(tmp_path):
    paths = make_run(tmp_path, max_steps=2000)
    run = start_worker(paths, step_s=0.2)
    port = free_port()
    server = _serve(paths, port)
    browser = Browser()
    try:
        wait_until(lambda: events(paths, "step"), 60, "the run's first step")
        _wait_listening(port)

        async def script(b, send):
            await send("Network.enable")
            await send("Page.enable")
            await send("Page.navigate", url=f"http://127.0.0.1:{port}/")
            seen: list[list[int]] = []
            deadline = time.time() + 90
            while time.time() < deadline and (len(seen) < 2 or max(seen[-1]) <= max(seen[0])):
                await asyncio.sleep(2)
                steps = _steps_on(b.screen())
                if steps:
                    seen.append(steps)
            b.before_key = b.screen()
            await send("Runtime.evaluate", expression="document.querySelector('.xterm-helper-textarea').focus()")
            await send("Input.insertText", text="s")  # stop
            await asyncio.sleep(4)
            return seen

        seen = asyncio.run(browser.run(script))
        assert len(seen) >= 2 and max(seen[-1]) > max(seen[0]), f"the step did not advance on the page: {seen}"
        screen = browser.screen()
        assert "read-only" not in browser.before_key and "control refused" in screen, screen
        assert not paths.control.exists() or '"stop"' not in paths.control.read_text()
        assert read_status(paths).get("state") in ("running", "starting")
    finally:
        browser.close()
        server.terminate()
        server.wait(10)
        kill_run(run)


def test_off_localhost_the_page_needs_the_printed_token(tmp_path):
    import urllib.error
    import urllib.request

    paths = make_run(tmp_path, max_steps=5)
    port = free_port()
    server = _serve(paths, port, "--host", "0.0.0.0", "--public-url", f"http://127.0.0.1:{port}")
    try:
        line = server.stdout.readline()
        token = re.search(r"\?token=([\w-]+)", line)
        assert token, line
        _wait_listening(port)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
            raise AssertionError("the page opened without the token")
        except urllib.error.HTTPError as err:
            assert err.code == 403
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={token.group(1)}", timeout=10) as r:
            assert r.status == 200 and "zerotui_token=" in (r.headers.get("Set-Cookie") or "")
            assert "textual-terminal" in r.read().decode()
    finally:
        server.terminate()
        server.wait(10)
