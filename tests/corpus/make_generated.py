"""The bad-input files that cannot sit in git as they are: binary, huge, in another encoding, or empty
folders (git keeps no empty folder). ``build(root)`` writes them next to a copy of the committed corpus
(``plans/ data/ models/``); tests/unit/test_bad_input_corpus.py calls it on a temporary copy.

    python tests/corpus/make_generated.py /tmp/corpus     # to look at them by hand

``build_real_models(root)`` adds model folders made from the real tiny model (a torn weights file, a
vocabulary the weights do not have): those need torch and are only built for the worker-level cases.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

#: Size of the one-line JSONL file: well past any row a tokenizer sees, under inputcheck.FULL_CHECK_BYTES
#: so the up-front check still reads it whole.
HUGE_LINE_BYTES = 24 << 20


def _junk(n: int, seed: int = 7) -> bytes:
    """Deterministic bytes that are not UTF-8, not JSON, not YAML (a NUL in the first few bytes)."""
    out = bytearray(b"\x00\x9f\xff")
    x = seed
    while len(out) < n:
        x = (1103515245 * x + 12345) & 0x7FFFFFFF
        out.append(x & 0xFF)
    return bytes(out[:n])


def build(root: Path) -> list[Path]:
    """Write the generated cases under ``root``; returns what was written."""
    plans, data, models = root / "plans", root / "data", root / "models"
    for d in (plans, data, models):
        d.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []

    def put(path: Path, content: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        made.append(path)

    # -- plans --------------------------------------------------------------------------------------
    put(plans / "latin1.yaml", "model: tiny\ndescription: caf\xe9 cr\xe8me\n".encode("latin-1"))
    put(plans / "binary_junk.yaml", _junk(4096))
    put(plans / "utf16.yaml", "model: tiny\nstage: 2\n".encode("utf-16"))
    (plans / "a_folder.yaml").mkdir(exist_ok=True)
    made.append(plans / "a_folder.yaml")

    # -- data -------------------------------------------------------------------------------------
    put(data / "latin1.jsonl", '{"text": "caf\xe9 cr\xe8me br\xfbl\xe9e"}\n'.encode("latin-1"))
    put(data / "utf16.txt", "a paragraph of text\n\nand another\n".encode("utf-16"))
    put(data / "binary_junk.jsonl", _junk(8192, seed=11))
    # One line of 24 MiB that never closes its string: a dump cut short, or a file with no newlines.
    line = b'{"text": "' + b"lorem ipsum dolor sit amet " * (HUGE_LINE_BYTES // 27)
    put(data / "huge_single_line.jsonl", line)
    put(data / "real_parquet_magic_then_junk.parquet", b"PAR1" + _junk(2048, seed=3) + b"PAR1")
    (data / "a_folder.jsonl").mkdir(exist_ok=True)
    made.append(data / "a_folder.jsonl")

    # -- models -----------------------------------------------------------------------------------
    # Weight files whose content does not matter for the up-front checks (they fail before loading).
    for folder in ("no_config", "no_tokenizer", "unknown_arch", "config_not_json", "custom_code"):
        put(models / folder / "model.safetensors", _junk(1024, seed=len(folder)))
    put(models / "weights_file.safetensors", _junk(1024, seed=5))
    return made


def build_real_models(root: Path) -> dict[str, Path]:
    """Model folders that pass every check made before launch and fail only when the worker loads them."""
    from zerotui.core.model.tiny import materialise

    src = materialise(42)
    models = root / "models"
    out = {}
    torn = models / "torn_weights"
    shutil.copytree(src, torn, dirs_exist_ok=True)
    weights = torn / "model.safetensors"
    blob = weights.read_bytes()
    weights.write_bytes(blob[: len(blob) // 2])  # a download cut short
    out["torn_weights"] = torn

    small_vocab = models / "vocab_mismatch"
    shutil.copytree(src, small_vocab, dirs_exist_ok=True)
    cfg = json.loads((small_vocab / "config.json").read_text())
    cfg["vocab_size"] = 512  # the weights (and the tokenizer) have 1024 rows
    (small_vocab / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    out["vocab_mismatch"] = small_vocab
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "generated-corpus")
    here = Path(__file__).parent
    for part in ("plans", "data", "models"):
        shutil.copytree(here / part, target / part, dirs_exist_ok=True)
    for p in build(target):
        print(p)
    if os.environ.get("WITH_REAL_MODELS"):
        for p in build_real_models(target).values():
            print(p)
