"""`zerotui presets` lists every file of the presets folder: one that cannot be used says why (a FIFO, a
device, bad YAML, a wrong field), and one its name does not load says what hides it."""
from __future__ import annotations

import json
import os

import pytest

from zerotui.core.plan import presets
from zerotui.core.plan.presets import list_presets, load_preset, save_preset
from zerotui.core.plan.schema import Plan


def _lines(text: str) -> dict[str, list[str]]:
    """name -> its listing lines (a hidden file shares its name with the preset that hides it)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("saved presets live in"):
            out.setdefault(line.split()[0], []).append(line)
    return out


def test_a_fifo_and_a_link_to_dev_zero_are_listed_as_unreadable(zerotui_cli, tmp_path):
    """They were left out without a word; reading either must not block or read without end (the run's
    timeout would fail the test, not hang it)."""
    folder = tmp_path / "user-presets"
    folder.mkdir()
    os.mkfifo(folder / "fifo.yaml")
    (folder / "zero.yaml").symlink_to("/dev/zero")
    (folder / "ok.yaml").write_text("description: fine\nmicro_batch: 2\n")
    r = zerotui_cli("presets", timeout=60)
    assert r.returncode == 0, r.stderr
    rows = _lines(r.stdout)
    assert rows["fifo"] == [f"{'fifo':<25}  user      (unreadable: is a FIFO (named pipe), not a regular file)"]
    assert rows["zero"][0].endswith("user      (unreadable: is a device, not a regular file)")
    assert rows["ok"][0].endswith("user      fine")
    listed = {row["name"]: row for row in json.loads(zerotui_cli("presets", "--json", timeout=60).stdout)}
    assert listed["fifo"]["problem"] == "is a FIFO (named pipe), not a regular file"
    assert listed["zero"]["problem"] == "is a device, not a regular file"
    assert listed["ok"]["problem"] is None


def test_an_invalid_preset_is_listed_with_why_in_one_line(user_presets):
    user_presets.mkdir()
    (user_presets / "syntax.yaml").write_text("description: x\nmodel: [1, 2\n")
    (user_presets / "field.yaml").write_text("description: seven stages\nstage: 7\n")
    (user_presets / "typo.yaml").write_text("stagee: 3\n")
    (user_presets / "empty.yaml").write_text("")
    (user_presets / "dangling.yaml").symlink_to(user_presets / "gone.yaml")
    got = {i.name: i for i in list_presets()}
    assert got["syntax"].problem == ("while parsing a flow sequence, expected ',' or ']', but got '<stream end>' "
                                     "at line 3, column 1")
    assert got["syntax"].description == f"(unreadable: {got['syntax'].problem})"
    assert got["field"].problem == "field 'stage': must be less than or equal to 3 (got 7)"
    assert got["field"].description == "(invalid plan: field 'stage': must be less than or equal to 3 (got 7))"
    assert got["typo"].problem.startswith("unknown key 'stagee'; did you mean 'stage'")
    assert got["empty"].problem == "the file is empty"
    assert got["dangling"].problem == f"is a link to {user_presets / 'gone.yaml'}, which does not exist"
    assert not any("\n" in i.description for i in got.values())


def test_a_user_preset_named_like_a_built_in_is_listed_as_hidden(zerotui_cli, tmp_path, user_presets):
    """The built-in keeps the name (as before); the user's file is no longer left out without a word."""
    folder = tmp_path / "user-presets"  # the CLI's presets folder, and the user_presets fixture's
    folder.mkdir()
    (folder / "tiny-cpu-demo.yaml").write_text("description: my own tiny\nmicro_batch: 3\n")
    r = zerotui_cli("presets")
    assert r.returncode == 0, r.stderr
    built_in, mine = _lines(r.stdout)["tiny-cpu-demo"]
    assert "built-in" in built_in
    assert mine.split()[1] == "user"
    assert mine.endswith("(tiny-cpu-demo.yaml is hidden by the built-in preset 'tiny-cpu-demo', which the name "
                         "'tiny-cpu-demo' loads: rename the file, or give its path) my own tiny")
    rows = json.loads(zerotui_cli("presets", "--json").stdout)
    hidden = [row for row in rows if row["name"] == "tiny-cpu-demo" and row["where"] == "user"]
    assert len(hidden) == 1 and hidden[0]["hidden_by"].endswith("presets/tiny-cpu-demo.yaml")
    # The precedence is kept: the name loads the built-in, and a caller can say which file it left unused.
    assert load_preset("tiny-cpu-demo").micro_batch != 3
    assert load_preset(str(folder / "tiny-cpu-demo.yaml")).micro_batch == 3
    note = presets.hidden_note("tiny-cpu-demo")
    assert note.startswith("preset 'tiny-cpu-demo' is the built-in one (") and \
        f"({folder / 'tiny-cpu-demo.yaml'}) is not used" in note
    assert presets.hidden_note("lora-zero2-1gpu") == "" and presets.hidden_note("nosuch") == ""
    # Lists that pick a preset by name (the wizard's picker, completion) see each name once.
    assert [i.name for i in list_presets()].count("tiny-cpu-demo") == 1


def test_name_yaml_and_name_yml_load_the_one_save_preset_writes(user_presets):
    """With both, the name loaded NAME.yml while `save_preset(..., overwrite=True)` rewrote NAME.yaml: a
    saved change never reached what the name loads."""
    user_presets.mkdir()
    (user_presets / "mine.yml").write_text("micro_batch: 1\n")
    (user_presets / "mine.yaml").write_text("micro_batch: 2\n")
    save_preset(Plan(micro_batch=5), "mine", overwrite=True)
    assert load_preset("mine").micro_batch == 5
    hidden = [i for i in list_presets(include_hidden=True) if i.hidden_by is not None]
    assert [(i.path.name, i.hidden_by.path.name) for i in hidden if i.hidden_by] == [("mine.yml", "mine.yaml")]


def test_names_and_descriptions_from_files_are_shown_escaped(zerotui_cli, tmp_path):
    """A file name or description holding an escape sequence must not restyle or clear the terminal."""
    folder = tmp_path / "user-presets"
    folder.mkdir()
    (folder / "a\x1b[2Jb.yaml").write_text('description: "red\\x1b[31m text"\n')
    r = zerotui_cli("presets")
    assert "\x1b" not in r.stdout
    assert "a\\x1b[2Jb" in r.stdout and "red\\x1b[31m text" in r.stdout


@pytest.mark.parametrize("name", ["fifo", "zero"])
def test_loading_a_preset_that_is_no_file_names_it(user_presets, name):
    from zerotui.core.errors import PresetError

    user_presets.mkdir()
    os.mkfifo(user_presets / "fifo.yaml")
    (user_presets / "zero.yaml").symlink_to("/dev/zero")
    with pytest.raises(PresetError) as err:
        load_preset(name)
    assert err.value.message.startswith(f"user preset {name!r} ({user_presets / (name + '.yaml')}): is a ")
