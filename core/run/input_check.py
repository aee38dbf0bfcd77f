"""Checks of a plan's local inputs — the data file and the model folder — before a run is launched.

The worker reads both anyway, but only after it has started, imported torch and DeepSpeed and set up
torch.distributed: tens of seconds, and then the user learns about a typo from a failed run. What can be
decided from the files alone, in about a second and without torch, is decided here, so ``zerotui train``
refuses with one line (exit 2) and nothing is written.

What only the real libraries can tell (a tokenizer that will not load, weights that are torn, a chat
template that rejects a row, rows with no answer left within ``seq_len``) is still the worker's to
report, as its ``run_finished`` reason.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from zerotui.core.deepspeed.overrides import check_overrides
from zerotui.core.errors import DataError, ModelError
from zerotui.core.plan.data_source import sources
from zerotui.core.plan.schema import SAMPLE_DATA, TINY_MODEL

#: Data files up to this size are read whole and every row is checked (measured: 0.9 s for a 64 MiB
#: alpaca JSONL of 98k rows on the 2-core dev machine); larger ones, and save_to_disk folders, are
#: checked on their first SAMPLE_ROWS rows.
FULL_CHECK_BYTES = 64 << 20
#: Rows of a save_to_disk folder or a larger file checked before launch (the rest are checked as they
#: are tokenised, with the same messages).
SAMPLE_ROWS = 1000
#: Files a Hugging Face tokenizer is loaded from (any one is enough).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json", "spiece.model")


def check_inputs(plan: Any, training: bool = True, planning_names: bool = True,
                 missing_data_hint: Optional[str] = None) -> None:
    """Raise ModelError / DataError for a local model folder or data file that cannot work, PlanError for
    ds_overrides that export or DeepSpeed would refuse.

    ``training=False`` (estimate, fit, export) checks only what planning reads: the model's config.
    ``planning_names=False`` lets a built-in planning name ('llama-2-7b') pass: the wizard's review
    leaves that verdict to its own launch gate. ``missing_data_hint`` replaces the hint for a data file
    that does not exist (a resume takes no --data: it says what works there)."""
    check_model(plan, training, planning_names)
    if training:
        check_data(plan, missing_data_hint)
    # The same ds_overrides check as export's and the launch's (launch_files): a plan estimate accepts is
    # one they accept too.
    check_overrides(plan)


# -- model ----------------------------------------------------------------------------------------

def local_model_folder(plan: Any) -> Path | None:
    """The plan's model as a local path, or None for 'tiny', a known planning name or a hub id."""
    if plan.model == TINY_MODEL:
        return None
    p = Path(plan.model).expanduser()
    if p.exists() or plan.model.startswith((".", "/", "~")):
        return p
    return None


def check_model(plan: Any, training: bool = True, planning_names: bool = True) -> None:
    folder = local_model_folder(plan)
    if folder is None:
        if training and planning_names and plan.model != TINY_MODEL:
            from zerotui.core.model.load import _planning_only

            if _planning_only(plan.model):
                raise ModelError(f"'{plan.model}' is a built-in shape for planning and has no weights to train",
                                 "give a local model folder or a hub id (e.g. meta-llama/Llama-2-7b-hf) to train")
        return
    if not folder.exists():
        raise ModelError(f"model folder {folder} does not exist",
                         "give a folder written by save_pretrained, a hub id such as Qwen/Qwen2.5-0.5B, or 'tiny'")
    if not folder.is_dir():
        raise ModelError(f"model {folder} is a file, not a folder",
                         "give the folder that holds config.json and the weights")
    config = read_model_config(folder)
    if config.get("auto_map") and not plan.trust_remote_code:
        raise ModelError(f"model folder {folder} ships its own Python code (auto_map in config.json), "
                         "which zerotui does not run unless you say so",
                         "add --trust-remote-code (trust_remote_code: true in a plan) only if you trust "
                         "that code")
    _check_architecture(folder, config)
    if not training:
        return
    from zerotui.core.model.load import check_local_folder

    check_local_folder(folder)  # weights present
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise ModelError(f"model folder {folder} has no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...)",
                         "copy the tokenizer files saved with the model into the folder")


def _check_architecture(folder: Path, config: dict[str, Any]) -> None:
    """An unknown model_type, named as such (transformers' own error lists 300 known types first)."""
    if config.get("auto_map"):
        return  # the folder's own code defines it (and the user opted in above)
    from zerotui.core.model.spec import spec_is_cached

    if spec_is_cached(config):  # built before with this transformers: its model_type is known
        return
    try:
        import transformers
        from transformers import CONFIG_MAPPING
    except ImportError:  # pragma: no cover - a dependency
        return
    model_type = config["model_type"]
    if model_type not in CONFIG_MAPPING:
        raise ModelError(f"model folder {folder}: config.json's model_type '{model_type}' is not an architecture "
                         f"transformers {transformers.__version__} knows",
                         "check model_type in config.json, or upgrade transformers if the model is newer")


def read_model_config(folder: Path) -> dict[str, Any]:
    """config.json of a model folder as a dict; ModelError naming the file when it is unusable."""
    path = folder / "config.json"
    if not path.exists() and not path.is_symlink():  # anything else there is read (and refused) by name
        hint = ("this is a LoRA adapter: give its base model, or merge it first with `zerotui merge`"
                if (folder / "adapter_config.json").exists() else
                "a Hugging Face model folder holds config.json next to the weights")
        raise ModelError(f"model folder {folder} has no config.json", hint)
    from zerotui.core.model.config_file import read_config_file

    data = read_config_file(path)  # bounded, a regular file, shape fields positive
    if not isinstance(data.get("model_type"), str) or not data["model_type"]:
        raise ModelError(f"model config {path} has no model_type",
                         "config.json names its architecture in model_type, e.g. \"llama\"")
    return data


# -- data -----------------------------------------------------------------------------------------

def check_data(plan: Any, missing_hint: Optional[str] = None) -> None:
    """DataError unless each of the plan's local data entries has rows its format can train on."""
    entries = sources(plan.data)
    for entry in entries:
        checked = _check_entry(plan, entry, missing_hint)
        if checked is not None and len(entries) == 1:
            _check_enough(plan, entry.label(), *checked)


def _check_entry(plan: Any, entry: Any, missing_hint: Optional[str]) -> Optional[tuple[int, str]]:
    """The usable rows of a whole small file and what was skipped of it (words: '' or ' (1 row skipped,
    line 2: not valid JSON ...)'), None where only a sample (or nothing) was checked."""
    from zerotui.core.data.files import SUFFIXES, FORMATS_HINT, read_rows

    data = entry.path
    if data.startswith("hub:") and not data[4:].partition(":")[0].strip():
        raise DataError(f"data {data!r} names no dataset", "give hub:OWNER/NAME, e.g. hub:tatsu-lab/alpaca")
    if data == SAMPLE_DATA or data.startswith("hub:"):
        return None  # the shipped file is tested; a hub dataset needs the network, the worker loads it

    path = Path(data).expanduser()
    if not path.exists():
        raise DataError(f"data file {path} does not exist", missing_hint or FORMATS_HINT)
    if path.is_dir() or (path.suffix.lower() in SUFFIXES and path.stat().st_size > FULL_CHECK_BYTES):
        _check_sample(plan, entry)
        return None
    raw = read_rows(data, plan.text_field, plan.max_samples)  # DataError: type, encoding, syntax
    bad = list(raw.bad.examples)
    usable = _check_rows(plan, raw.source, raw.rows, raw.where, bad, len(raw.rows) + raw.bad.count)
    skipped = len(raw.rows) + raw.bad.count - usable
    said = f" ({_rows(skipped)} skipped, {'; '.join(bad[:2])})" if skipped and bad else ""
    return usable, said


def _check_sample(plan: Any, entry: Any) -> None:
    """A save_to_disk folder or a large file: the first SAMPLE_ROWS rows, through the same checks."""
    from zerotui.core.data.arrow_tokenise import sample_rows
    from zerotui.core.data.sources import open_source

    src = open_source(entry, plan.text_field)  # DataError: not a dataset folder, type, encoding
    sample = sample_rows(src, SAMPLE_ROWS)
    if not sample:
        raise DataError(f"{src.label}: no readable rows", "give a file or dataset that holds training rows")
    _check_rows(plan, src.label, [r for r, _ in sample], [w for _, w in sample], [], len(sample), sample=True)


def _check_rows(plan: Any, source: str, rows: list, where: list, bad: list, total: int, sample: bool = False) -> int:
    from zerotui.core.data.prompts import BadRow, check_row, detect_format, expected_fields

    fmt = detect_format(rows, plan, source)
    usable = 0
    for row, at in zip(rows, where):
        try:
            check_row(row, plan, fmt)
            usable += 1
        except BadRow as err:
            if len(bad) < 3:
                bad.append(f"{at}: {err}")
    if not usable:
        detail = f" (first: {'; '.join(bad[:3])})" if bad else ""
        what = f"in its first {total} rows" if sample else f"out of {total}"
        raise DataError(f"{source}: no usable {fmt} rows {what}{detail}", expected_fields(fmt, plan))
    return usable


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def _check_enough(plan: Any, source: str, usable: int, skipped: str = "") -> None:
    """Refuse data that cannot fill one micro-batch on every process (core/data/sampler.py would, later).

    Rows only shrink on the way to sequences (rows whose answer is cut off are dropped, packing merges
    them), and the world size used here is the smallest the plan allows, so this never refuses a run
    that could start; it catches the 2-row file given to an 8-sequence micro-batch."""
    if plan.packing:
        return  # packed sequences depend on token counts: the worker decides
    n_eval = 0 if plan.eval_fraction <= 0 or usable < 2 else min(usable - 1, max(1, round(usable * plan.eval_fraction)))
    world = plan.world_size(0)
    need = plan.micro_batch * world
    if usable - n_eval < need:
        held = f" ({n_eval} held out for evaluation)" if n_eval else ""
        raise DataError(f"{source}: {_rows(usable)} usable{skipped}, {usable - n_eval} to train on{held}: "
                        f"fewer than one micro-batch of {need} ({plan.micro_batch} x {world} process(es))",
                        "use more data, a smaller --micro-batch, or --eval-fraction 0")
