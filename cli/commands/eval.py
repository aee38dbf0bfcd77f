"""`zerotui eval RUN`: a finished run's model on its held-out split — perplexity, and ROUGE-L of its
answers for prompt/response data — appended to the run's events as an ``eval`` event."""
from __future__ import annotations

import argparse
import json
import sys

from zerotui.cli.arg_types import folder
from zerotui.cli.progress_lines import ProgressLines
from zerotui.core.errors import RunError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from zerotui.core.infer.evaluate import DEFAULT_SAMPLES

    parser.add_argument("run", metavar="RUN", help="run folder, name, or unique part of a name (`zerotui runs`)")
    parser.add_argument("--checkpoint", metavar="TAG",
                        help="score this checkpoint (step120, 120 or latest) instead of final/")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, metavar="N",
                        help=f"held-out prompts answered for ROUGE-L (default: {DEFAULT_SAMPLES}; 0: perplexity "
                             "only); the perplexity always covers the whole held-out split")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR", help="where runs live (default: the user data folder)")
    parser.add_argument("--json", action="store_true",
                        help="print the eval event, the run and every generated answer as JSON")


def _fmt(value: object, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"  # type: ignore[str-format]


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from zerotui.cli.library_output import held_back
    from zerotui.core.events.stream import EventWriter
    from zerotui.core.run.folder import resolve_run, summarise

    if args.samples < 0:
        raise RunError(f"--samples {args.samples} is negative", "give 0 (perplexity only) or more")
    paths = resolve_run(args.run, args.runs_dir, prefer_live=False)
    summary = summarise(paths)
    if summary.live:
        # events.jsonl has one writer while the worker lives; its own evals already carry perplexity.
        raise RunError(f"run {paths.name} is still {summary.state}",
                       f"evaluate it once it has ended (`zerotui stop {paths.name}` ends it with a checkpoint)")
    # The terminal's stderr, taken before held_back() replaces it: progress is ours, not library chatter.
    progress = ProgressLines(sys.stderr)
    with held_back():  # stdout is the result and stderr one line when the request is wrong
        from zerotui.core.infer.evaluate import eval_event, evaluate
        from zerotui.core.infer.weights import load_run_model

        rm = load_run_model(paths, args.checkpoint, doing="evaluate",
                            building=lambda: progress("loading the model", 0, 0))
        result = evaluate(rm, args.samples, progress)
    for note in rm.skipped:
        sys.stderr.write(f"zerotui eval: skipped {note}\n")
    fields = eval_event(rm, result)
    with EventWriter(paths.events) as writer:
        event = writer.emit("eval", **fields)
    if args.json:
        print(json.dumps({"run": str(paths.root), "event": event,
                          "generations": [asdict(g) for g in result.generations]}))
        return 0
    where = rm.source + (f", step {rm.step}" if rm.step is not None and rm.source == "final" else "")
    line = (f"{paths.name} ({where}): held-out loss {_fmt(result.loss, 4)}, perplexity "
            f"{_fmt(result.perplexity, 3)} over {result.tokens:,} tokens")
    if result.rouge_l is not None:
        line += f"; ROUGE-L {result.rouge_l:.3f} over {len(result.generations)} answers"
    elif args.samples:
        line += "; no ROUGE-L (text data has no prompts to answer)"
    print(line)
    return 0
