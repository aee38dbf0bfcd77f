"""``zerotui merge RUN -o DIR``: a run's result as a Hugging Face folder, a 4-bit folder or a GGUF file.

- LoRA / QLoRA runs: the adapter merged into the base in the output dtype (core/export/merge_lora.py).
- Full fine-tunes: ``final/`` re-saved, or a checkpoint's ZeRO shards consolidated with DeepSpeed's lazy
  zero_to_fp32 mode straight into sharded safetensors (core/export/shards.py), one shard in RAM.
- ``--format bnb-4bit`` / ``gguf``: written from that merged folder, staged on the output disk.

Before anything is read, the RAM and disk it needs are checked (core/export/room.py). Every export is
loaded back and compared with the model written (core/export/verify.py) before it is handed over. The
output appears whole or not at all (built in a temporary sibling, then renamed), honours the umask, and
an existing non-empty folder is never overwritten. The dtype defaults to the run's training precision.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from zerotui.core.atomic import honour_umask
from zerotui.core.errors import RunError, StorageError
from zerotui.core.sizes import format_bytes
from zerotui.core.export import verify
from zerotui.core.export.checkpoint_load import load_checkpoint
from zerotui.core.export.final_check import final_problem
from zerotui.core.export.merge_full import save_model, write_full
from zerotui.core.export.merge_lora import merged_lora, require_base, torch_dtype_of
from zerotui.core.export.room import check_room, estimate_need, free_disk
from zerotui.core.train.checkpoint_files import write_error

DTYPES = ("bf16", "fp16", "fp32")
FORMATS = ("safetensors", "bnb-4bit", "gguf")
DEFAULT_SHARD = 5 * 10**9  # Hugging Face's customary 5 GB shards


@dataclass
class MergeResult:
    out: Path
    format: str
    dtype: str
    source: str
    files: dict[str, int] = field(default_factory=dict)  # name -> bytes
    verification: dict = field(default_factory=dict)
    room: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d["out"] = str(self.out)
        d["total_bytes"] = sum(self.files.values())
        return d


def _check_out(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise RunError(f"{out_dir} exists and is a file", "give a new folder for the merged model")
        if any(out_dir.iterdir()):
            raise RunError(f"{out_dir} is not empty; merge never overwrites", "give a new or empty folder")
    parent = out_dir.parent
    if not parent.exists():
        raise RunError(f"the folder {parent} does not exist", "create it first, or choose another -o")
    if not os.access(parent, os.W_OK):
        raise RunError(f"cannot write in {parent}", "choose a folder you can write to")


def merge_run(run_paths: Any, out_dir: Path | str, checkpoint: str | None = None,
              dtype: str | None = None, notes: list[str] | None = None, **options: Any) -> Path:
    """``export_run`` returning only the output folder."""
    return export_run(run_paths, out_dir, checkpoint, dtype, notes, **options).out


def export_run(run_paths: Any, out_dir: Path | str, checkpoint: str | None = None,
               dtype: str | None = None, notes: list[str] | None = None, fmt: str = "safetensors",
               max_shard_size: int = DEFAULT_SHARD, force: bool = False,
               stage: Callable[[str], None] | None = None) -> MergeResult:
    """Write the merged / consolidated model of ``run_paths`` to ``out_dir`` as ``fmt``.

    ``checkpoint``: a tag (``step120``), a step number or ``latest``; by default ``final/`` when the run
    has one, else the newest complete checkpoint. ``force`` skips the RAM check (not the disk check).
    ``stage`` is told each step as it begins (a 70B merge takes many minutes, and says nothing else).
    """
    say = stage or (lambda _what: None)
    from transformers.utils import logging as hf_logging
    from zerotui.core.model.spec import spec_for_plan
    from zerotui.core.plan.schema import load_plan
    from zerotui.core.run.folder import require_intact
    from zerotui.core.train.checkpoint import list_checkpoints

    hf_logging.disable_progress_bar()
    out = Path(out_dir).expanduser().resolve()
    _check_out(out)
    if not os.path.lexists(run_paths.plan):
        raise RunError(f"{run_paths.root} has no plan.yaml: not a zerotui run folder", "`zerotui runs` lists the runs")
    require_intact(run_paths, "merge")
    plan = load_plan(run_paths.plan, follow=False)
    dtype = dtype or plan.precision
    if dtype not in DTYPES:
        raise RunError(f"unknown dtype {dtype!r}", f"use one of: {', '.join(DTYPES)}")
    if fmt not in FORMATS:
        raise RunError(f"unknown format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    final = run_paths.final
    use_final = checkpoint is None and ((final / "config.json").exists() or (final / "adapter_config.json").exists())
    if not use_final and checkpoint in (None, "latest") and not any(c.complete for c in list_checkpoints(run_paths.checkpoints)):
        raise RunError(f"run {run_paths.name} has no final/ model and no complete checkpoint to merge",
                       "wait for its first checkpoint (every --save-interval steps or --save-minutes), "
                       "or `zerotui resume` it")
    if plan.uses_adapters():
        require_base(plan, run_paths)  # before its config is read, and long before the first stage line
    if use_final and not plan.uses_adapters() and not _readable_model(plan):
        # A full fine-tune's final/ is a whole model with its config: the base it started from may be gone.
        plan = plan.with_changes(model=str(final), model_config=None)
    spec = spec_for_plan(plan)  # the model's shape from its config alone: nothing is loaded yet
    if fmt == "gguf":
        from zerotui.core.export.gguf_export import check_supported

        check_supported(spec.arch)  # before hours of merging, not after
    if plan.uses_adapters():
        kind = "qlora" if plan.method == "qlora" else "lora"
    else:
        kind = "final" if use_final else "zero"
    need = estimate_need(spec.params_total, dtype, max_shard_size, kind, plan.stage, fmt)
    room = check_room(need, out, force)
    damaged = final_problem(final, plan) if use_final else ""  # after the refusals that read no weights
    if damaged:  # the newest complete checkpoint holds the same weights; without one, say what is wrong
        if not any(c.complete for c in list_checkpoints(run_paths.checkpoints)):
            raise RunError(f"run {run_paths.name}: final/{damaged}, and the run has no complete checkpoint to "
                           "merge instead", "restore final/ from a copy, or train the run again")
        use_final = False
        if notes is not None:
            notes.append(f"final/{damaged}: merged the newest complete checkpoint instead")
        if kind == "final":  # a full run's checkpoint is consolidated from its shards: more RAM than final/
            kind = "zero"
            need = estimate_need(spec.params_total, dtype, max_shard_size, kind, plan.stage, fmt)
            room = check_room(need, out, force)
    # weights_only loads; a damaged newest checkpoint is skipped for the previous one (notes say why)
    # (no stage line before this: a refusal of the request, a missing or damaged checkpoint, stays one line)
    loaded = None if use_final else load_checkpoint(run_paths, checkpoint, lazy=True)
    if loaded is not None and notes is not None:
        notes += [f"skipped checkpoint {s}" for s in loaded.skipped]
    source = "final" if use_final else loaded.info.tag  # type: ignore[union-attr]
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staged = tmp if fmt == "safetensors" else Path(tempfile.mkdtemp(prefix=f".{out.name}.merged-", dir=out.parent))
    try:
        say("merging the adapters into the base model" if plan.uses_adapters() else "gathering the weights")
        if plan.uses_adapters():
            reference = save_model(merged_lora(plan, final if use_final else None, loaded, dtype),
                                    staged, dtype, max_shard_size)
        else:
            reference = write_full(plan, final if use_final else None, loaded, dtype, staged, max_shard_size)
        loaded = None  # drops the memory-mapped checkpoint before anything loads back
        run_tokenizer(plan, final).save_pretrained(str(staged))
        result = MergeResult(out, fmt, dtype, source, room=room)
        say("loading the written model back to check it")
        result.verification, loaded_logits = _verify_folder(staged, dtype, reference)
        reference = loaded_logits if reference is None else reference
        if fmt != "safetensors":
            say(f"writing {fmt}")
        if fmt == "bnb-4bit":
            from zerotui.core.export.quantised import write_4bit

            result.verification = {"merged": result.verification,
                                   "bnb-4bit": write_4bit(staged, tmp, torch_dtype_of(dtype), reference,
                                                          verify.TOLERANCE[dtype])}
            run_tokenizer(plan, final).save_pretrained(str(tmp))
        elif fmt == "gguf":
            result.verification = {"merged": result.verification, "gguf": _gguf(plan, staged, tmp, dtype, reference)}
        (tmp / "zerotui.json").write_text(json.dumps({
            "merged_from": str(run_paths.root), "source": source, "method": plan.method, "format": fmt,
            "base_model": plan.model, "dtype": dtype, "time": time.time()}, indent=2))
        honour_umask(tmp)  # mkdtemp made it 0700; the merged model gets what the umask says
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.rename(tmp, out)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        why = write_error(err)  # also the tokenizers library's bare Exception for ENOSPC, not an OSError
        if why:
            raise StorageError(f"writing {need.what} to {out.parent} failed: {why} "
                               f"({format_bytes(free_disk(out.parent))} free now, about "
                               f"{format_bytes(need.disk)} needed); nothing was left behind",
                               "free space there, or give -o a folder on a disk with more room") from None
        raise
    finally:
        if staged != tmp:
            shutil.rmtree(staged, ignore_errors=True)
    result.files = {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.is_file()}
    return result


def _verify_folder(folder: Path, dtype: str, reference: Any | None) -> tuple[dict, Any]:
    """The written folder's verdict, and its probe logits (what the 4-bit / GGUF files must compute)."""
    import gc

    from zerotui.core.export.shards import saved_dtypes

    gc.collect()  # the merged model is gone before its copy loads
    kinds = saved_dtypes(folder)
    want = {"bf16": "BF16", "fp16": "F16", "fp32": "F32"}[dtype]  # safetensors' header names
    model = verify.load_folder(folder, torch_dtype_of(dtype))
    logits = verify.probe_logits(model)
    del model
    verdict = verify.compare(logits, reference, verify.TOLERANCE[dtype])
    verdict["tensor_dtypes"] = kinds
    if any(k != want and k in ("F64", "F32", "F16", "BF16") for k in kinds):
        verdict.update(match=False, reason=f"floating tensors other than {want}: {kinds}")
    return verify.check("safetensors", verdict), logits


def _gguf(plan: Any, staged: Path, out: Path, dtype: str, reference: Any | None) -> dict:
    from zerotui.core.export.gguf_export import FILE, read_back, write_gguf
    from zerotui.core.model.load import load_config

    config = load_config(plan)
    path = write_gguf(staged, out, config, dtype)
    tensors = read_back(path)
    verdict: dict = {"tensors": len(tensors)}
    expected = sum(1 for _ in _safetensors_names(staged))
    if len(tensors) != expected:
        verdict.update(match=False, reason=f"{len(tensors)} tensors read back, {expected} written")
        return verify.check("GGUF", verdict)
    # transformers reads GGUF Llama files (dequantised into torch): the same logits, or it is wrong
    model = verify.load_folder(out, torch_dtype_of(dtype), gguf_file=FILE)
    verdict.update(verify.compare(verify.probe_logits(model), reference, verify.TOLERANCE[dtype]))
    del model
    return verify.check("GGUF", verdict)


def _safetensors_names(folder: Path) -> Any:
    from safetensors import safe_open
    from zerotui.core.export.shards import shard_files

    for path in shard_files(folder):
        with safe_open(str(path), framework="pt") as fh:
            yield from fh.keys()


def run_tokenizer(plan: Any, final: Path) -> Any:
    """The tokenizer a run trained with: the one saved in ``final/``, else the plan's."""
    if (final / "tokenizer_config.json").exists():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(final))
    from zerotui.core.model.load import load_tokenizer

    return load_tokenizer(plan)


def _readable_model(plan) -> bool:
    """Whether the plan's base model (its config) can still be read here."""
    from zerotui.core.errors import ModelError
    from zerotui.core.model.spec import spec_for_plan

    try:
        spec_for_plan(plan)
    except ModelError:
        return False
    return True
