"""`zerotui chat RUN`: talk to a run's model — ``final/`` or a checkpoint — with the answer streamed.

One answer with ``--prompt TEXT`` (or a prompt piped on stdin); a conversation when stdin is a terminal.
"""
from __future__ import annotations

import argparse
import json
import sys

from zerotui.cli.arg_types import folder
from zerotui.core.errors import RunError

EXIT_WORDS = ("/exit", "/quit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run folder, name, or unique part of a name (`zerotui runs`)")
    parser.add_argument("--checkpoint", metavar="TAG",
                        help="use this checkpoint (step120, 120 or latest) instead of final/")
    parser.add_argument("--prompt", metavar="TEXT", help="answer this once and exit (default: a conversation)")
    parser.add_argument("--system", metavar="TEXT", help="a system message before the conversation")
    parser.add_argument("--max-new-tokens", type=int, default=128, metavar="N",
                        help="longest answer in tokens (default: 128; at most what the model's context "
                             "window leaves after the conversation)")
    parser.add_argument("--temperature", type=float, default=0.0, metavar="T",
                        help="sampling temperature; 0 (the default) is greedy: the same answer every time")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed for sampling (temperature > 0)")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR", help="where runs live (default: the user data folder)")
    parser.add_argument("--json", action="store_true", help="print the answer as one JSON object (no streaming)")


def _say(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    from zerotui.cli.library_output import held_back
    from zerotui.core.infer.generate import Settings, reply
    from zerotui.core.run.folder import resolve_run

    settings = Settings(args.max_new_tokens, args.temperature, args.seed)
    settings.check()  # before minutes of loading
    prompt = args.prompt
    interactive = prompt is None and sys.stdin.isatty()
    if prompt is None and not interactive:
        prompt = sys.stdin.read().strip()
    if not interactive and not (prompt or "").strip():
        raise RunError("the prompt is empty", "give --prompt TEXT, pipe one on stdin, or run it in a terminal to chat")
    if interactive and args.json:
        raise RunError("--json needs --prompt (or a prompt on stdin)", "leave out --json to chat")
    paths = resolve_run(args.run, args.runs_dir, prefer_live=False)
    with held_back():  # stdout is the answer (--json) and stderr one line when the request is wrong
        from zerotui.core.infer.weights import load_run_model

        rm = load_run_model(paths, args.checkpoint, doing="chat with")
    for note in rm.skipped:
        sys.stderr.write(f"zerotui chat: skipped {note}\n")
    head = [{"role": "system", "content": args.system}] if args.system else []
    if not interactive:
        messages = [*head, {"role": "user", "content": prompt}]
        if args.json:
            text = reply(rm.model, rm.tokenizer, rm.plan, messages, settings)
            print(json.dumps({"run": str(paths.root), "source": rm.source, "step": rm.step, "prompt": prompt,
                              "text": text}))
        else:
            text = reply(rm.model, rm.tokenizer, rm.plan, messages, settings, on_text=_say)
            _say("\n")
            _blank_note(text)
        return 0
    sys.stderr.write(f"chatting with {paths.name} ({rm.source}); an empty line or /exit ends, /reset forgets\n")
    messages = list(head)
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            _say("\n")
            return 0
        if not line or line in EXIT_WORDS:
            return 0
        if line == "/reset":
            messages = list(head)
            continue
        messages.append({"role": "user", "content": line})
        _say("model> ")
        answer = reply(rm.model, rm.tokenizer, rm.plan, messages, settings, on_text=_say)
        _say("\n")
        _blank_note(answer)
        messages.append({"role": "assistant", "content": answer})


def _blank_note(text: str) -> None:
    """An answer of only spaces and newlines looks like nothing happened: say what it was."""
    if not text.strip():
        sys.stderr.write(f"zerotui chat: the model answered with {len(text)} whitespace characters and nothing else "
                         "(a model early in training, or one the prompt's layout does not suit)\n")
