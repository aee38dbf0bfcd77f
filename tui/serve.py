"""`zerotui serve`: the dashboard (or the runs list) in a browser, through textual-serve.

textual-serve starts the command for each browser connection as its own process, driving it through
Textual's web driver, and relays the terminal over a websocket. What this adds:

- **Read-only by default.** The served command is ``zerotui attach --read-only``: every control (pause,
  checkpoint, stop, resume) is refused on the screen, so a shared link cannot stop a 32-hour run.
  ``--allow-control`` serves the full dashboard.
- **A token off localhost.** Bound to anything but a loopback address, the page and its websocket need
  the token printed at start-up (``?token=...``, then a cookie, since the page's own websocket URL carries
  no query). Loopback needs none: whoever can reach it is on this machine already.
"""
from __future__ import annotations

import hmac
import secrets
import shlex
import sys
from typing import Any, Optional

LOOPBACK = ("127.0.0.1", "localhost", "::1")
COOKIE = "zerotui_token"


def served_command(run: Optional[str], runs_dir: Optional[str], allow_control: bool) -> str:
    argv = [sys.executable, "-m", "zerotui.cli.main", "attach"]
    if run:
        argv.append(run)
    if runs_dir:
        argv += ["--runs-dir", runs_dir]
    if not allow_control:
        argv.append("--read-only")
    return shlex.join(argv)


def make_server(command: str, host: str, port: int, token: Optional[str], public_url: Optional[str] = None) -> Any:
    """A textual-serve Server for ``command`` that asks for ``token`` (None: no token)."""
    from aiohttp import web
    from textual_serve.server import Server

    class TokenServer(Server):
        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            if token is not None:
                app.middlewares.append(_token_middleware(token))
            return app

    return TokenServer(command, host=host, port=port, title="zerotui", public_url=public_url)


def _token_middleware(token: str) -> Any:
    from aiohttp import web

    @web.middleware
    async def check(request: Any, handler: Any) -> Any:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        if not hmac.compare_digest(given, token):
            raise web.HTTPForbidden(text="zerotui serve: open the URL with the token printed at start-up\n")
        response = await handler(request)
        if request.query.get("token") and isinstance(response, web.StreamResponse) and not response.prepared:
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        return response

    return check


def new_token(host: str) -> Optional[str]:
    return None if host in LOOPBACK else secrets.token_urlsafe(18)
