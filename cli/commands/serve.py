"""`zerotui serve [RUN] [--host 127.0.0.1] [--port 8000] [--allow-control]`: the dashboard in a browser.

Bound to localhost by default; any other address needs the token it prints (tui/serve.py says why).
Read-only unless --allow-control. Over SSH, `ssh -L 8000:localhost:8000 host` and open
http://localhost:8000 on your own machine.
"""
from __future__ import annotations

import argparse
import re

from zerotui.cli.arg_types import folder
from zerotui.core.errors import PlanError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", metavar="RUN",
                        help="run to show (default: the newest live run, else the newest run)")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR", help="where the runs are")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; others need the printed token)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--public-url", metavar="URL",
                        help="the URL browsers use to reach this server, when it differs (a proxy, 0.0.0.0)")
    parser.add_argument("--allow-control", action="store_true",
                        help="let the browser pause, checkpoint, stop and resume runs (default: read-only)")
    parser.add_argument("--json", action="store_true",
                        help="print {run, path, url, read_only} as one JSON line once the address is known "
                             "(the server's own lines go to stderr)")


def run(args: argparse.Namespace) -> int:
    from zerotui.cli.run_choice import say_choice
    from zerotui.core.run.folder import require_intact, resolve_run
    from zerotui.tui.serve import make_server, new_token, served_command

    if not 1 <= args.port <= 65535:
        raise PlanError(f"--port {args.port}: not a port number", "use 1-65535, e.g. --port 8000")
    if args.public_url is not None and not re.match(r"^https?://[^\s/?#]+", args.public_url):
        raise PlanError(f"--public-url {args.public_url!r}: not an http(s) address",
                        "give the address browsers use, e.g. --public-url https://gpu-box.example:8000")
    _check_address(args.host, args.port)  # before the URL is announced, not after it
    # a clear line now, not in the browser; a short name that stood for the one live run says so
    paths = resolve_run(args.run, args.runs_dir, prefer_live=True, note=say_choice("serve"))
    require_intact(paths, "serve")
    token = new_token(args.host)
    command = served_command(str(paths.root), None, args.allow_control)
    server = make_server(command, args.host, args.port, token, args.public_url)
    url = f"{server.public_url}/" + (f"?token={token}" if token else "")
    if args.json:
        from rich.console import Console
        from zerotui.cli.json_result import print_json

        server.console = Console(stderr=True)  # its banner and request log: stdout is the one document
        print_json({"run": paths.name, "path": str(paths.root), "url": url, "read_only": not args.allow_control})
    else:
        mode = "controls allowed" if args.allow_control else "read-only"
        print(f"zerotui serve: run {paths.name} at {url} ({mode}); Ctrl+C stops the server, not the run", flush=True)
    server.serve()
    return 0


def _check_address(host: str, port: int) -> None:
    """PlanError when ``host:port`` cannot be listened on (a port in use, a name that does not resolve):
    the server binds only once it serves, after its address was printed as if it worked."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:
        raise PlanError(f"--host {host!r}: not an address this machine can listen on ({err})",
                        "use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)") from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as err:
            raise PlanError(f"cannot listen on {host}:{port}: {err.strerror or err}",
                            "another program may hold that port: choose another with --port") from None
