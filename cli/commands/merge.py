"""`zerotui merge RUN -o DIR`: LoRA merged into the base, or ZeRO shards consolidated, as a Hugging Face
model folder that ``AutoModelForCausalLM.from_pretrained(DIR)`` loads; ``--format bnb-4bit`` writes it
quantised to 4 bits (NF4), ``--format gguf`` as DIR/model.gguf for llama.cpp."""
from __future__ import annotations

import argparse
import json

from zerotui.cli.arg_types import folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from zerotui.core.export.merge import DEFAULT_SHARD, FORMATS

    parser.add_argument("run", metavar="RUN", help="run folder, name, or unique part of a name (`zerotui runs`)")
    parser.add_argument("-o", "--output", required=True, type=folder, metavar="DIR",
                        help="new (or empty) folder for the model; never overwritten")
    parser.add_argument("--checkpoint", metavar="TAG",
                        help="merge this checkpoint (step120, 120 or latest) instead of final/")
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"],
                        help="weights' number format (default: the run's training precision)")
    parser.add_argument("--format", choices=FORMATS, default="safetensors", dest="fmt",
                        help="safetensors (default), bnb-4bit (bitsandbytes NF4) or gguf (Llama models)")
    parser.add_argument("--max-shard-size", default=str(DEFAULT_SHARD), metavar="SIZE",
                        help="largest safetensors file, e.g. 5GB (default) or 2GiB")
    parser.add_argument("--force", action="store_true",
                        help="go ahead although the RAM estimate exceeds what is available (never the disk)")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR", help="where runs live (default: the user data folder)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON (paths, sizes, dtype, verification)")


def run(args: argparse.Namespace) -> int:
    import sys

    from zerotui.cli.library_output import held_back
    from zerotui.cli.progress_lines import ProgressLines
    from zerotui.core.run.folder import resolve_run
    from zerotui.core.sizes import format_bytes, parse_size

    shard = parse_size(args.max_shard_size, "--max-shard-size")
    paths = resolve_run(args.run, args.runs_dir, prefer_live=False)
    # stdout is this command's answer (--json) and stderr its notes: DeepSpeed's accelerator notice,
    # bitsandbytes' kernel lookup, transformers' warnings and zero_to_fp32's progress are held back, and
    # shown only when the merge fails with something that is not a refusal of the request (a bug).
    # The terminal's stderr, taken before held_back() replaces it: the stage lines are ours.
    progress = ProgressLines(sys.stderr)
    with held_back():
        from zerotui.core.export.merge import export_run

        notes: list[str] = []
        result = export_run(paths, args.output, checkpoint=args.checkpoint, dtype=args.dtype, notes=notes,
                            fmt=args.fmt, max_shard_size=max(1, shard), force=args.force, stage=progress)
    for note in notes:  # a damaged newest checkpoint: say which one was passed over, and why
        sys.stderr.write(f"zerotui merge: {note}\n")
    if args.json:
        print(json.dumps({"run": str(paths.root), "output": str(result.out), **result.to_json()}))
    else:
        total = format_bytes(sum(result.files.values()))
        print(f"merged {paths.name} → {result.out} ({result.format}, {result.dtype}, {total}, verified by loading it)")
    return 0
