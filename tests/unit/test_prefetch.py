"""Reading a run's weights and checkpoint ahead (core/train/prefetch.py): which files, how much, and that
nothing it meets stops or hangs it."""
from __future__ import annotations

import os

from zerotui.core.train import prefetch


def _tree(root):
    ck = root / "step40"
    ck.mkdir(parents=True)
    for name, size in [("mp_rank_00_model_states.pt", 300), ("zero_pp_rank_0_mp_rank_00_optim_states.pt", 500),
                       ("zero_pp_rank_1_mp_rank_00_optim_states.pt", 500), ("trainer_state.json", 20)]:
        (ck / name).write_bytes(os.urandom(size))
    return ck


def test_a_rank_reads_the_shared_files_and_only_its_own_shards(tmp_path):
    ck = _tree(tmp_path)
    names = lambda rank: sorted(p.name for p in prefetch.checkpoint_files(ck, rank))
    assert names(0) == ["mp_rank_00_model_states.pt", "trainer_state.json", "zero_pp_rank_0_mp_rank_00_optim_states.pt"]
    assert "zero_pp_rank_1_mp_rank_00_optim_states.pt" in names(1)
    assert "zero_pp_rank_0_mp_rank_00_optim_states.pt" not in names(1)


def test_special_files_and_links_are_left_alone(tmp_path):
    ck = _tree(tmp_path)
    os.mkfifo(ck / "zero_pp_rank_0_fifo.pt")  # opening a FIFO would block the reader forever
    (ck / "link.pt").symlink_to("/dev/zero")  # and reading this one would never end
    files = prefetch.checkpoint_files(ck, 0)
    assert all(f.is_file() and not f.is_symlink() for f in files)
    assert prefetch.read_through(files) == 300 + 500 + 20


def test_only_as_much_as_the_budget_is_read(tmp_path):
    ck = _tree(tmp_path)
    files = prefetch.checkpoint_files(ck, 0)  # 300, 20, 500 bytes in name order
    assert [f.stat().st_size for f in prefetch.within_budget(files, 400)] == [300, 20]
    assert prefetch.start(files, budget=10) == []  # nothing fits: no thread


def test_a_model_folders_weights_and_nothing_for_a_hub_id(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"x" * 64)
    (tmp_path / "config.json").write_text("{}")
    assert [p.name for p in prefetch.weight_files(str(tmp_path))] == ["model.safetensors"]
    assert prefetch.weight_files("meta-llama/Llama-2-7b-hf") == []


def test_the_thread_reads_everything_and_can_be_turned_off(tmp_path, monkeypatch):
    ck = _tree(tmp_path)
    files = prefetch.checkpoint_files(ck, 0)
    threads = prefetch.start(files, budget=1 << 20)
    assert len(threads) == prefetch.READERS
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    monkeypatch.setenv("ZEROTUI_PREFETCH", "0")
    assert prefetch.start(files, budget=1 << 20) == []
    (ck / "mp_rank_00_model_states.pt").unlink()  # a file gone since the listing: skipped, not raised
    assert prefetch.read_through(files) == 520


def test_pieces_cover_each_file_once_whatever_the_piece_and_chunk_size(tmp_path, monkeypatch):
    sizes = [0, 1, 6, 7, 8, 50]
    files = []
    for i, n in enumerate(sizes):
        f = tmp_path / f"f{i}.bin"
        f.write_bytes(b"z" * n)
        files.append(f)
    for piece, chunk in ((7, 3), (7, 7), (64, 5), (1, 1)):
        monkeypatch.setattr(prefetch, "PIECE_BYTES", piece)
        monkeypatch.setattr(prefetch, "CHUNK_BYTES", chunk)
        assert prefetch.read_through(files) == sum(sizes), (piece, chunk)
