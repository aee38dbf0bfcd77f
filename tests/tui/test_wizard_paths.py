"""Picking files and folders by keyboard, the data preview that follows, and the NVMe folder's free
space and measured write speed (a real 256 MiB write, in a thread)."""
from __future__ import annotations

import json


from wizard_helpers import choose, jump, new_run_at_data, pilot_test, settle, step
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import workstation_24gb



@pilot_test
async def test_browse_for_a_dataset_and_see_its_first_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    data = tmp_path / "chat.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"hi {i}"},
                                                     {"role": "assistant", "content": "hello"}]}) + "\n"
                            for i in range(8)))
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await new_run_at_data(pilot)
        app.screen.query_one("#browse-data").focus()
        await pilot.press("enter")
        await settle(pilot)
        assert type(app.screen).__name__ == "PathPickerScreen"
        box = app.screen.query_one("#picker-path")
        box.focus()
        await pilot.press("home", "ctrl+k", *list(str(data)), "enter")
        await settle(pilot)
        assert step(pilot) == "data" and app.state.plan.data == str(data)
        note = str(app.screen.query_one("#data-format-note").render())
        assert "Detected format: chat" in note
        assert app.screen.query_one("#data-preview").row_count == 5


@pilot_test
async def test_nvme_folder_shows_free_space_and_measures_write_speed(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await jump(pilot, 4)
        assert not app.screen.query_one("#nvme-check").display   # hidden until something goes to NVMe
        await choose(pilot, "offload_optimizer", "nvme")
        assert "nvme_path is required" in str(app.screen.query_one("#row-nvme_path .field-error").render())
        box = app.screen.query_one("#f-nvme_path")
        box.focus()
        await pilot.press(*list(str(tmp_path)))
        await settle(pilot)
        assert app.state.valid and str(app.state.plan.nvme_path) == str(tmp_path)
        assert "free on NVMe" in str(app.screen.query_one("#nvme-space").render())  # the fake machine's drive
        app.screen.query_one("#probe-nvme").press()
        for _ in range(200):
            await settle(pilot)
            text = str(app.screen.query_one("#nvme-speed").render())
            if "GB/s" in text or "✗" in text:
                break
        assert "GB/s" in text, text
        assert not list(tmp_path.iterdir())                      # the test file is gone again
