"""Messages of the CLI. A system error that reaches the top of a command: one line, exit 1, and a hint
only where the error is one the user can act on that way (a full disk, permissions); an address in use
says what to change, others are shown as they are (a "free some space" hint on a port in use sent users
the wrong way). A blank answer from chat is said to be one."""
from __future__ import annotations

import errno

import pytest

from zerotui.cli import main as cli_main


@pytest.mark.parametrize("code,hint", [
    (errno.ENOSPC, "(free some space, then run the command again)"),
    (errno.EACCES, "(fix the permissions, then run the command again)"),
    (errno.EADDRINUSE, "(another program listens on that port: choose another with --port)"),
    (errno.ENAMETOOLONG, ""),
])
def test_each_system_error_gets_the_hint_that_fits_it(monkeypatch, capsys, code, hint):
    def run(_args):
        raise OSError(code, __import__("os").strerror(code), "/some/file")

    from zerotui.cli.commands import runs

    monkeypatch.setattr(runs, "run", run)
    assert cli_main.main(["runs"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("zerotui: /some/file: ")
    if hint:
        assert err.rstrip().endswith(hint)
    else:
        assert "(" not in err and "free some space" not in err


def test_a_blank_answer_is_said_to_be_one(capsys):
    from zerotui.cli.commands.chat import _blank_note

    _blank_note("  \n\n ")
    assert "answered with 5 whitespace characters and nothing else" in capsys.readouterr().err
    _blank_note(" a ")
    assert capsys.readouterr().err == ""


def test_serve_refuses_an_address_it_cannot_listen_on_before_announcing_it(tmp_path, capsys):
    import socket

    from zerotui.cli.main import main

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    try:
        assert main(["serve", "--port", str(port), "--runs-dir", str(tmp_path)]) == 2
        out = capsys.readouterr()
        assert f"cannot listen on 127.0.0.1:{port}" in out.err and "--port" in out.err and out.out == ""
    finally:
        held.close()
    assert main(["serve", "--host", "no such host name", "--runs-dir", str(tmp_path)]) == 2
    assert "not an address this machine can listen on" in capsys.readouterr().err
    assert main(["serve", "--public-url", "javascript:alert(1)", "--runs-dir", str(tmp_path)]) == 2
    assert "not an http(s) address" in capsys.readouterr().err
