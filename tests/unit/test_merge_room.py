"""The RAM / disk check of `zerotui merge`: what each kind of merge needs, and refusals that name the
need, what is there, and what would work."""
import pytest
from zerotui.core.errors import HardwareError, StorageError
from zerotui.core.export.room import (
    Need,
    available_ram,
    check_room,
    TOKENIZER_FILES,
    estimate_need,
    free_disk,
)

SEVEN_B = 6_738_415_616
GB = 10**9


def test_a_16bit_merge_needs_one_copy_plus_a_shard_and_half_of_fp32():
    bf16 = estimate_need(SEVEN_B, "bf16", 5 * GB, "lora")
    fp32 = estimate_need(SEVEN_B, "fp32", 5 * GB, "lora")
    assert bf16.ram == SEVEN_B * 2 + 5 * GB and fp32.ram == SEVEN_B * 4 + 5 * GB
    # the weights, and the tokenizer's files beside them
    assert bf16.disk == SEVEN_B * 2 + TOKENIZER_FILES and fp32.disk == SEVEN_B * 4 + TOKENIZER_FILES
    assert estimate_need(SEVEN_B, "bf16", 5 * GB, "qlora").ram > bf16.ram  # the 4-bit base meanwhile


def test_lazy_zero3_consolidation_holds_shards_not_the_model():
    small = estimate_need(SEVEN_B, "bf16", 1 * GB, "zero", stage=3)
    assert small.ram == 1 * GB * 4 // 2 + 1 * GB  # one fp32 gather and its bf16 cast
    assert estimate_need(70 * GB, "bf16", 1 * GB, "zero", stage=3).ram == small.ram  # whatever the size
    assert estimate_need(SEVEN_B, "bf16", 1 * GB, "zero", stage=2).ram > SEVEN_B * 4  # stage 2 concatenates


def test_exports_count_the_staged_merged_folder_on_disk():
    plain = estimate_need(SEVEN_B, "bf16", GB, "lora")
    files = TOKENIZER_FILES  # the tokenizer's files are written once, whatever the format
    assert estimate_need(SEVEN_B, "bf16", GB, "lora", fmt="gguf").disk - files == 2 * (plain.disk - files)
    assert plain.disk < estimate_need(SEVEN_B, "bf16", GB, "lora", fmt="bnb-4bit").disk < 2 * plain.disk


def test_a_need_past_this_machines_ram_is_refused_unless_forced(tmp_path):
    need = Need(ram=available_ram() + 50 * GB, disk=1, what="a test merge", dtype="fp32")
    with pytest.raises(HardwareError) as err:
        check_room(need, tmp_path / "out")
    line = err.value.one_line()
    assert "needs about" in line and "of RAM" in line and "available" in line and "--dtype bf16" in line
    need.dtype = "bf16"  # already 16-bit: a smaller dtype is not what would work
    with pytest.raises(HardwareError, match="more RAM") as err:
        check_room(need, tmp_path / "out")
    assert "--dtype" not in err.value.hint
    assert check_room(need, tmp_path / "out", force=True)["ram_check"] == "skipped (--force)"


def test_a_need_past_the_output_disk_is_refused_even_forced(tmp_path):
    need = Need(ram=1, disk=free_disk(tmp_path) + 50 * GB, what="a test merge")
    with pytest.raises(StorageError) as err:
        check_room(need, tmp_path / "new" / "out", force=True)
    assert "of disk at" in err.value.message and "-o" in err.value.hint
    assert not (tmp_path / "new").exists()
