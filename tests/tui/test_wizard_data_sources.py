"""The data step previews every kind of entry training reads, through training's own readers: a
save_to_disk folder (and a DatasetDict's split), a parquet file, a mix of entries, and a hub id that
is not in the local cache. Real datasets folders and files; the Pilot drives the real wizard."""
from __future__ import annotations

import json

import datasets
import pytest
from wizard_helpers import fill, new_run_at_data, pilot_test, settle, step
from zerotui.core.errors import DataError
from zerotui.core.plan.data_source import DataSource
from zerotui.core.plan.schema import Plan
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.data_preview import preview
from zerotui.tui.wizard.demo_hardware import workstation_24gb

ALPACA = [{"instruction": f"Name the number {i}.", "input": "", "output": f"It is {i}."} for i in range(30)]
CHAT = [{"messages": [{"role": "user", "content": f"hi {i}"}, {"role": "assistant", "content": "hello"}]}
        for i in range(30)]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub answers from the local cache only


@pilot_test
async def test_a_save_to_disk_folder_previews_its_first_rows_in_the_wizard(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(ALPACA).save_to_disk(str(folder))
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await new_run_at_data(pilot)
        assert step(pilot) == "data"
        await fill(pilot, "data", str(folder))
        await settle(pilot)
        assert app.state.plan.data == str(folder)
        note = str(app.screen.query_one("#data-format-note").render())
        assert "Detected format: alpaca" in note and "folder" not in note, note
        table = app.screen.query_one("#data-preview")
        assert table.row_count == 5 and table.display
        assert [str(c) for c in table.get_row_at(0)][:3] == ["Name the number 0.", "", "It is 0."]
        # a folder that is no dataset: the field says what training would say
        plain = tmp_path / "plain"
        plain.mkdir()
        await fill(pilot, "data", str(plain))
        await settle(pilot)
        assert "is a folder, not a file" in app.screen.data_error and "save_to_disk" in app.screen.data_error


def test_a_dataset_dict_folder_previews_the_entrys_split(tmp_path):
    folder = tmp_path / "dd"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(ALPACA),
                          "chat": datasets.Dataset.from_list(CHAT)}).save_to_disk(str(folder))
    assert preview(str(folder)).format == "alpaca"   # the default split, as training takes it
    p = preview([DataSource(path=str(folder), split="chat")])
    assert p.format == "chat" and len(p.rows) == 5
    with pytest.raises(DataError, match=r"no split 'valid' \(it has train, chat\)"):
        preview([DataSource(path=str(folder), split="valid")])


def test_a_mix_previews_rows_of_each_entry_and_parquet_is_read(tmp_path):
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(CHAT).save_to_disk(str(folder))
    pq = tmp_path / "a.parquet"
    datasets.Dataset.from_list(ALPACA).to_parquet(str(pq))
    only = preview(str(pq))
    assert only.format == "alpaca" and only.rows[0][:3] == ["Name the number 0.", "", "It is 0."]
    mix = Plan(data=[{"path": str(pq), "weight": 3}, {"path": str(folder)}]).data
    p = preview(mix)
    assert p.format == "mixed (alpaca, chat)" and p.columns[0] == "source"
    assert {r[0] for r in p.rows} == {str(pq), str(folder)} and len(p.rows) == 4


def test_a_hub_id_outside_the_local_cache_is_a_note_and_a_broken_line_is_named(tmp_path):
    p = preview("hub:zerotui-test/not-here")
    assert p.format == "unknown" and p.note.startswith("hub dataset zerotui-test/not-here")
    assert "local cache" in p.note
    jl = tmp_path / "a.jsonl"
    jl.write_text('{"instruction": "cut\n' + "".join(json.dumps(r) + "\n" for r in ALPACA))
    p = preview([DataSource(path=str(jl))])  # an entry of a mix: training's reader, which skips the line
    assert p.format == "alpaca" and p.rows[0][0] == "Name the number 0."
