#!/usr/bin/env bash
# The newcomer path, scripted: a fresh clone in a clean environment, the README's
# "Two commands" block run exactly as written in a real terminal (tmux, 120x40), then the keys the README
# gives for the wizard, until the demo run it launches has finished.
#
#   bash scripts/newcomer_path.sh [REPO]          # REPO: what to clone (default: this repository)
#
# A clean environment means: a fresh clone (committed state only), a new empty HOME (no pip cache, no
# zerotui config or runs, no DeepSpeed op cache), and a tmux server started with `env -i`, so nothing of
# the caller's shell (an activated venv, ZEROTUI_* variables) leaks in. How this machine reaches packages
# stays: /etc/pip.conf, the user's pip.conf (copied into the new HOME) and PIP_* variables — on a machine
# whose only way to PyPI is a configured mirror, a user's pip works through them too.
#
# Writes benchmarks/results/newcomer-<date>.json (timings, what was typed, the run's outcome) and
# newcomer-<date>-<n>-<screen>.txt (the terminal captured at each stage). Exit 0 when the run completed.
# The clone (with its venv) is removed afterwards unless NEWCOMER_KEEP=1 or something failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo=${1:-$here}
stamp=$(date +%Y-%m-%d)
results=${NEWCOMER_RESULTS:-$here/benchmarks/results}
work=$(mktemp -d "${TMPDIR:-/tmp}/zerotui-newcomer.XXXXXX")
clone=$work/zerotui
home=$work/home
sock=newcomer-$$
session=newcomer
setup_timeout=${NEWCOMER_SETUP_TIMEOUT:-1200}
run_timeout=${NEWCOMER_RUN_TIMEOUT:-3600}
mkdir -p "$home" "$results"
prefix="$results/newcomer-$stamp"
rm -f "$prefix"-*.txt
log() { printf '[newcomer %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
now() { date +%s.%N; }

tm() { tmux -L "$sock" "$@"; }
cleanup() {
  tm kill-server 2>/dev/null || true
  # The clone holds a full venv (GBs): kept only when asked (NEWCOMER_KEEP=1) or when something failed.
  if [ "${NEWCOMER_KEEP:-0}" = 1 ] || [ "${ok:-0}" != 1 ]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

captures=()
capture() {  # capture <name>: the visible screen, as the user sees it
  local n=$(( ${#captures[@]} + 1 ))
  local file="$prefix-$n-$1.txt"
  tm capture-pane -p -t "$session" > "$file"
  captures+=("$(basename "$file")")
}
screen_has() { tm capture-pane -p -t "$session" | grep -qF -- "$1"; }
wait_for_text() {  # wait_for_text <text> <timeout s>: 0 when the screen shows it
  local deadline=$(( $(date +%s) + $2 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    screen_has "$1" && return 0
    sleep 0.2
  done
  return 1
}

# -- the clone and the README's command -----------------------------------------------------------
log "cloning $repo into $clone"
git clone --quiet "$repo" "$clone"
commit=$(git -C "$clone" rev-parse HEAD)
# The first command of the "Two commands" section, exactly as the README writes it (comments dropped).
readme_cmd=$(awk '/^## Two commands/{s=1} s&&/^```bash/{b=1;next} b&&/^```/{exit} b&&!/^#/&&NF{print}' "$clone/README.md")
[ -n "$readme_cmd" ] || { log "README.md has no command under '## Two commands'"; exit 1; }
# The keys the README gives for the wizard ("press **n** ... **ctrl+r** ... then **l**").
for key in '**n**' '**ctrl+r**' '**l**'; do
  grep -qF -- "$key" "$clone/README.md" || { log "README no longer says to press $key: update this script"; exit 1; }
done
log "README command: $readme_cmd"

# A PATH without any virtual environment the caller may have activated.
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '/\.venv/' -e '/venv/' | paste -sd: -)
for conf in .config/pip/pip.conf .pip/pip.conf; do
  if [ -f "$HOME/$conf" ]; then mkdir -p "$home/$(dirname "$conf")"; cp "$HOME/$conf" "$home/$conf"; fi
done
pip_env=()
while IFS= read -r var; do pip_env+=("$var"); done < <(env | grep -E '^PIP_[A-Z_]+=' || true)
env -i HOME="$home" PATH="$clean_path" TERM=xterm-256color LANG=C.UTF-8 "${pip_env[@]}" \
  ${PYENV_ROOT:+PYENV_ROOT="$PYENV_ROOT"} ${PYENV_VERSION:+PYENV_VERSION="$PYENV_VERSION"} \
  tmux -L "$sock" -f /dev/null new-session -d -s "$session" -x 120 -y 40 -c "$clone"
tm set-option -t "$session" history-limit 20000 >/dev/null
sleep 0.5

t0=$(now)
tm send-keys -t "$session" -l -- "$readme_cmd"
tm send-keys -t "$session" Enter
log "typed the README command; waiting for setup (up to ${setup_timeout}s)"
deadline=$(( $(date +%s) + setup_timeout ))
until [ -f "$clone/.venv/.zerotui-setup" ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then capture setup-timeout; log "setup did not finish"; exit 1; fi
  sleep 0.5
done
t_setup=$(now)
log "setup done after $(python3 -c "print(round($t_setup-$t0))")s; waiting for the first frame"
wait_for_text "zerotui — this machine" 180 || { capture no-first-frame; log "no first frame"; exit 1; }
t_frame=$(now)
sleep 1
capture hardware

# -- the wizard, with the README's keys -----------------------------------------------------------
tm send-keys -t "$session" n
wait_for_text "step 1 of 5" 30 || { capture after-n; log "n did not open step 1"; exit 1; }
sleep 1; capture step-1-model
tm send-keys -t "$session" C-r
wait_for_text "step 5 of 5" 30 || { capture after-ctrl-r; log "ctrl+r did not open the review"; exit 1; }
wait_for_text "Ready to launch" 60 || true
sleep 1; capture review
t_launch=$(now)
tm send-keys -t "$session" l
wait_for_text "start-up" 60 || wait_for_text "step " 30 || { capture after-l; log "no dashboard"; exit 1; }
t_dashboard=$(now)
capture dashboard-start

# -- the run --------------------------------------------------------------------------------------
zt() { env -i HOME="$home" PATH="$clean_path" LANG=C.UTF-8 "$clone/.venv/bin/zerotui" "$@"; }
run_json() { zt runs --json 2>/dev/null || echo '[]'; }
field() {  # field <python expr over r (the newest run)>
  python3 -c "import json,sys; runs=json.load(sys.stdin); r=runs[0] if runs else {}; print($1)"
}
log "launched; following the run (up to ${run_timeout}s)"
deadline=$(( $(date +%s) + run_timeout ))
mid_captured=0
state=starting
while [ "$(date +%s)" -lt "$deadline" ]; do
  state=$(run_json | field 'r.get("state", "starting")')
  case "$state" in completed|failed|stopped|lost) break ;; esac
  if [ "$mid_captured" = 0 ] && screen_has "ETA"; then sleep 5; capture dashboard-training; mid_captured=1; fi
  sleep 2
done
t_end=$(now)
sleep 2
capture dashboard-end
run_path=$(run_json | field 'r.get("path", "")')
log "run ended: $state ($run_path)"

# Quit the TUI (the run is over), then keep the terminal's own history: the set-up's output.
tm send-keys -t "$session" C-q
sleep 2
tm capture-pane -p -S - -t "$session" > "$prefix-transcript.txt"
captures+=("$(basename "$prefix-transcript.txt")")

python3 - "$prefix.json" "$run_path" <<EOF
import json, os, platform, sys
out, run_path = sys.argv[1], sys.argv[2]
t0, t_setup, t_frame, t_launch, t_dash, t_end = $t0, $t_setup, $t_frame, $t_launch, $t_dashboard, $t_end
events = []
if run_path:
    with open(os.path.join(run_path, "events.jsonl"), "rb") as fh:
        for line in fh:
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
first = lambda kind: next((e for e in events if e.get("type") == kind), None)
started, finished = first("run_started"), first("run_finished")
steps = [e for e in events if e.get("type") == "step"]
first_step = steps[0] if steps else None
phases = [(e.get("name"), round(e["t"] - t_launch, 1)) for e in events if e.get("type") == "phase" and e.get("done") in (None, 0)]
r = lambda x: None if x is None else round(x, 1)
doc = {
    "what": "scripts/newcomer_path.sh: fresh clone, clean HOME, README command in tmux 120x40, wizard keys n, ctrl+r, l",
    "date": "$stamp",
    "clone_of": "$repo", "commit": "$commit",
    "readme_command": """$readme_cmd""",
    "keys": ["n", "ctrl+r", "l"],
    "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()},
    "timings_s": {
        "setup": r(t_setup - t0),
        "setup_done_to_first_frame": r(t_frame - t_setup),
        "command_to_first_frame": r(t_frame - t0),
        "launch_key_to_dashboard": r(t_dash - t_launch),
        "launch_to_run_started": r(started["t"] - t_launch) if started else None,
        "launch_to_first_step_event": r(first_step["t"] - t_launch) if first_step else None,
        "run_started_to_finished": r(finished["t"] - started["t"]) if started and finished else None,
        "launch_to_finished": r(finished["t"] - t_launch) if finished else None,
        "total": r(t_end - t0),
    },
    "phases_after_launch_s": phases,
    "run": {
        "state": finished.get("state") if finished else "$state",
        "reason": finished.get("reason") if finished else None,
        "total_steps": started.get("total_steps") if started else None,
        "last_step": steps[-1].get("step") if steps else None,
        "first_loss": steps[0].get("loss") if steps else None,
        "last_loss": steps[-1].get("loss") if steps else None,
        "plan": {k: (started or {}).get("plan", {}).get(k) for k in
                 ("model", "data", "stage", "precision", "micro_batch", "seq_len", "epochs", "max_steps")},
    },
    "captures": """${captures[*]}""".split(),
}
with open(out, "w") as fh:
    json.dump(doc, fh, indent=1)
    fh.write("\n")
print(json.dumps(doc["timings_s"]))
EOF
log "results: $prefix.json"
[ "$state" = completed ] && ok=1
[ "${ok:-0}" = 1 ]
