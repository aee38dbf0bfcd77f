"""How a run ended, decided by the supervisor from what each rank recorded and what was seen from outside
(which process died, and its wait status). The supervisor writes the result as ``run_finished``."""
from __future__ import annotations

from typing import Any, Optional

from zerotui.core.run.rank_records import describe_wait_status


def decide(records: dict[int, dict[str, Any]], deaths: dict[int, dict[str, Any]], launcher_rc: Optional[int],
           forced: str = "", launch_error: str = "", single: bool = False,
           abort_cause: str = "") -> tuple[str, str, Optional[int]]:
    """(state, reason, the rank to blame or None) from the ranks' records and the deaths seen.
    ``single``: a run of one process, whose reasons do not name ranks. ``abort_cause``: what the supervisor
    found behind a SIGABRT (NVMe offload's full disk), said in place of the usual guess.

    Precedence, most telling first: a rank that failed on its own (an exception that is not a lost peer
    or a timeout); a rank that died and said nothing (kill -9, the OOM killer, a segfault, or killed by
    the launcher after it stopped answering) — the earliest seen if several; a collective that timed out
    or lost its peer; then rank 0's own result. Silent deaths beat lost-peer failures whatever the
    order they were seen in: the peers of a killed rank record their error within milliseconds, often
    before a 0.2 s poll sees the death."""
    if launch_error:
        return "failed", launch_error, None
    if forced:
        return "stopped", forced, None
    ended = {r: rec for r, rec in records.items() if rec.get("state")}
    failed = sorted((rec for rec in ended.values() if rec["state"] == "failed"), key=lambda r: r.get("ended", 0))
    own = [rec for rec in failed if (rec.get("cause") or "error") == "error"]
    if own:
        first = own[0]
        if single:
            return "failed", str(first.get("reason")), None
        if len(own) == len(records) > 1 and len({r.get("reason") for r in own}) == 1:
            return "failed", f"every rank failed: {first.get('reason')}", first["rank"]
        return "failed", f"rank {first['rank']} failed: {first.get('reason')}", first["rank"]
    silent = sorted(((r, d) for r, d in deaths.items() if r not in ended), key=lambda kv: kv[1]["at"])
    timeouts = [rec for rec in failed if rec.get("cause") == "timeout"]
    r0 = ended.get(0)
    if r0 is not None and r0["state"] in ("completed", "stopped") and not failed:
        # Deaths after rank 0 ended cleanly (a rank ended for lingering) do not undo the result.
        silent = [(r, d) for r, d in silent if d["at"] < r0.get("ended", 0)]
    if silent:
        rank, d = silent[0]
        how = describe_wait_status(d.get("status"))
        if timeouts and timeouts[0].get("ended", 0) < d["at"]:
            t = timeouts[0]
            reason = (f"rank {rank} (pid {d['pid']}) stopped answering: rank {t['rank']}'s collective timed out "
                      f"waiting ({t.get('reason')}); rank {rank} was then ended by the launcher"
                      + (f" ({how})" if how else ""))
        else:
            who = f"the worker (pid {d['pid']})" if single else f"rank {rank} (pid {d['pid']})"
            reason = f"{who} died without reporting why"
            reason += f": {how}" if how else " (killed by a signal, or crashed)"
            if "SIGKILL" in how or not how:
                reason += " — a kill -9 or the kernel's OOM killer (check `dmesg`)"
            elif "SIGABRT" in how and abort_cause:
                reason += f" — {abort_cause}"
            elif "SIGABRT" in how:
                reason += " — NCCL's watchdog aborts a rank whose collective timed out; worker.log has its message"
        return "failed", reason + _others_note(ended, deaths, rank), None if single else rank
    if failed:
        first = failed[0]
        what = "a collective timed out" if first.get("cause") == "timeout" else "it lost its peer(s)"
        others = _others_note(ended, deaths, first["rank"])
        return "failed", f"rank {first['rank']}: {what}: {first.get('reason')}{others}", None
    if r0 is not None:
        return str(r0["state"]), str(r0.get("reason") or r0["state"]), None
    if not records:
        code = f" with code {launcher_rc}" if launcher_rc is not None else ""
        return "failed", f"the DeepSpeed launcher exited{code} before any rank started (see worker.log)", None
    code = f"; the launcher exited with code {launcher_rc}" if launcher_rc is not None else ""
    return "failed", f"rank 0 ended without recording how{code} (see worker.log)", 0


def _others_note(ended: dict[int, dict], deaths: dict[int, dict], culprit: int) -> str:
    parts = []
    for rank in sorted(set(deaths) | set(ended)):
        if rank == culprit:
            continue
        if rank in ended and ended[rank].get("state") == "failed":
            parts.append(f"rank {rank} then failed too ({ended[rank].get('cause') or 'error'})")
        elif rank in deaths and rank not in ended:
            how = describe_wait_status(deaths[rank].get("status")) or "ended"
            parts.append(f"rank {rank} was then {how if how.startswith('killed') else 'ended: ' + how}")
    return ("; " + ", ".join(parts)) if parts else ""
