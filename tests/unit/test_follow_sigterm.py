"""`zerotui train/resume --foreground` is a client of the run: SIGTERM to it (`timeout`, a session
manager) ends only the client, which says that the run goes on and how to reach it (it vanished without
a word); following in-process puts the previous SIGTERM handler back when it ends."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from zerotui.core.run.folder import new_run_dir, write_status

FOLLOW = ("import sys; from pathlib import Path; from zerotui.core.run.folder import RunPaths; "
          "from zerotui.cli.run_follow import follow_run; "
          "print('following', flush=True); sys.exit(follow_run(RunPaths(Path(sys.argv[1]))))")


def test_sigterm_detaches_the_foreground_client_with_a_word(tmp_path):
    paths = new_run_dir(tmp_path, "live")
    paths.plan.write_text("name: live\n")
    paths.events.write_text("")
    write_status(paths, state="running", pid=os.getpid(), pids=[os.getpid()], heartbeat=time.time())
    client = subprocess.Popen([sys.executable, "-c", FOLLOW, str(paths.root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "following"
    time.sleep(0.5)
    client.send_signal(signal.SIGTERM)
    _, err = client.communicate(timeout=30)
    assert client.returncode == 143
    assert "detached (SIGTERM); the run goes on in the background" in err and f"zerotui attach {paths.name}" in err
    assert "Traceback" not in err


def test_following_in_process_puts_the_sigterm_handler_back(tmp_path):
    from zerotui.cli.run_follow import follow_run
    from zerotui.core.events.stream import EventWriter
    from zerotui.core.run.folder import RunPaths

    paths = new_run_dir(tmp_path, "done")
    paths.plan.write_text("name: done\n")
    with EventWriter(paths.events) as w:
        w.emit("run_finished", state="completed", reason="done", step=1)
    before = signal.getsignal(signal.SIGTERM)
    follow_run(RunPaths(paths.root))
    assert signal.getsignal(signal.SIGTERM) is before
