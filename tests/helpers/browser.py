"""A real headless Chromium driven over the DevTools protocol (aiohttp's websocket client): open a page,
collect the binary websocket frames it receives (textual-serve's terminal output), type into it.

The terminal is drawn on a canvas, so its text is read the way the browser got it: the frames' bytes
fed to a terminal emulator (pyte), which gives the screen a user would see.
"""
from __future__ import annotations

import asyncio
import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from typing import Any, Optional


def chromium() -> Optional[str]:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    def __init__(self, width: int = 1400, height: int = 900) -> None:
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="zt-chromium-")
        self.proc = subprocess.Popen(
            [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--remote-debugging-port={self.port}", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.frames: list[bytes] = []
        self.texts: list[str] = []
        self.http_status: dict[str, int] = {}
        self.sent: list[str] = []
        self._id = 0

    def page_ws(self, timeout: float = 30) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json") as r:
                    pages = [p for p in json.load(r) if p.get("type") == "page"]
                if pages:
                    return pages[0]["webSocketDebuggerUrl"]
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError("chromium's DevTools endpoint did not come up")

    async def run(self, script) -> Any:
        """``await script(self, send)``, with ``send(method, **params)`` a DevTools call, events collected."""
        import aiohttp

        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(self.page_ws(), max_msg_size=0) as ws:
                pending: dict[int, asyncio.Future] = {}

                async def reader() -> None:
                    async for msg in ws:
                        data = json.loads(msg.data)
                        if "id" in data and data["id"] in pending:
                            pending.pop(data["id"]).set_result(data)
                        elif data.get("method") == "Network.webSocketFrameReceived":
                            r = data["params"]["response"]
                            if r.get("opcode") == 2:
                                self.frames.append(base64.b64decode(r["payloadData"]))
                            else:
                                self.texts.append(r.get("payloadData", ""))
                        elif data.get("method") == "Network.webSocketFrameSent":
                            self.sent.append(data["params"]["response"].get("payloadData", ""))
                        elif data.get("method") == "Network.responseReceived":
                            resp = data["params"]["response"]
                            self.http_status[resp["url"]] = resp["status"]

                async def send(method: str, **params: Any) -> dict:
                    self._id += 1
                    fut = asyncio.get_running_loop().create_future()
                    pending[self._id] = fut
                    await ws.send_str(json.dumps({"id": self._id, "method": method, "params": params}))
                    return await asyncio.wait_for(fut, 30)

                task = asyncio.create_task(reader())
                try:
                    return await script(self, send)
                finally:
                    task.cancel()

    def size(self) -> tuple[int, int]:
        """The terminal's size as the page last told the server (its ``resize`` messages)."""
        cols, lines = 80, 24
        for text in self.sent:
            try:
                msg = json.loads(text)
            except ValueError:
                continue
            if isinstance(msg, list) and msg and msg[0] == "resize":
                cols, lines = int(msg[1]["width"]), int(msg[1]["height"])
        return cols, lines

    def screen(self) -> str:
        """What the terminal shows after every frame so far."""
        import pyte

        columns, lines = self.size()
        screen = pyte.Screen(columns, lines)
        stream = pyte.ByteStream(screen)
        for f in self.frames:
            stream.feed(f)
        return "\n".join(screen.display)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)
