"""The bad-input corpus, CLI side: malformed plans, argument sets, data files and model folders, each
through the real `zerotui` command in a fresh process; every case exits 2 with one line on stderr that
names the problem and says what would work, and nothing is written.
"""
from __future__ import annotations

import os

import pytest
from corpus_shared import CORPUS, _generator, corpus, _env, zerotui, snapshot, T  # noqa: F401


def assert_unchanged(before: dict, after: dict) -> None:
    """Files identical; a new folder is tolerated only if it is empty (the runs or presets folder)."""
    files = lambda snap: {k: v for k, v in snap.items() if v[0] == "file"}
    assert files(after) == files(before)
    new_dirs = set(after) - set(before)
    assert not any(other.startswith(d + os.sep) for d in new_dirs for other in after), new_dirs


HINT_PLAN = "`zerotui estimate --help`"        # the pointer that type/range errors carry


# (id, argv, words the single stderr line must contain: what is wrong, and what would work)
PLANS = [
    ("yaml-syntax", ["train", "plans/bad_yaml.yaml"], ["bad_yaml.yaml", "line 3", "fix the YAML syntax"]),
    ("yaml-tabs", ["train", "plans/tabs.yaml"], ["tabs.yaml", "'\\t'", "line 3", "indentation"]),
    ("yaml-two-documents", ["estimate", "--plan", "plans/two_documents.yaml"],
     ["two_documents.yaml", "single document", "line 3"]),
    ("unknown-key", ["train", "plans/unknown_key.yaml"], ["unknown key 'micro_batchsize'", "did you mean 'micro_batch'"]),
    ("wrong-type", ["train", "plans/wrong_type.yaml"], ["wrong_type.yaml", "seq_len", "'long'", HINT_PLAN]),
    ("list-not-mapping", ["train", "plans/list_not_mapping.yaml"], ["list_not_mapping.yaml", "mapping", "got list",
                                                                    "model: tiny"]),
    ("scalar-not-mapping", ["estimate", "plans/scalar.yaml"], ["scalar.yaml", "got str", "model: tiny"]),
    ("stage2-param-offload", ["train", "plans/stage2_param_offload.yaml"], ["offload_params=cpu", "stage 3",
                                                                            "--stage 3"]),
    ("nvme-without-path", ["train", "plans/nvme_without_path.yaml"], ["nvme_path", "--nvme-path DIR"]),
    ("negative-lr", ["train", "plans/negative_lr.yaml"], ["field 'lr'", "greater than 0", "-0.001", HINT_PLAN]),
    ("zero-micro-batch", ["fit", "plans/zero_micro_batch.yaml"], ["field 'micro_batch'", "(got 0)"]),
    ("absurd-seq-len", ["train", "plans/absurd_seq_len.yaml"], ["field 'seq_len'", "1048576", "100000000"]),
    ("absurd-epochs", ["train", "plans/absurd_epochs.yaml"], ["field 'epochs'", "1000"]),
    ("nested-model", ["train", "plans/nested_model.yaml"], ["field 'model'", "string"]),
    ("bad-run-name", ["train", "plans/bad_name.yaml"], ["field 'name'", "letters, digits", "my run; rm -rf ~"]),
    ("bool-as-word", ["train", "plans/bool_as_word.yaml"], ["field 'packing'", "boolean", "'maybe'"]),
    ("targets-not-list", ["train", "plans/targets_not_list.yaml"], ["field 'lora_targets'", "list"]),
    ("negative-gpu-id", ["estimate", "plans/negative_gpu_id.yaml"], ["gpu_ids", ">= 0", "[-1]"]),
    ("unknown-precision", ["train", "plans/unknown_precision.yaml"], ["field 'precision'", "'bf16', 'fp16' or 'fp32'",
                                                                      "'fp8'"]),
    ("overrides-not-mapping", ["train", "plans/overrides_not_mapping.yaml"], ["field 'ds_overrides'", "dictionary"]),
    ("empty-plan", ["train", "plans/empty.yaml"], ["empty.yaml", "empty", "'model:'"]),
    ("comment-only-plan", ["train", "plans/only_comment.yaml"], ["only_comment.yaml", "empty"]),
    ("latin1-plan", ["train", "plans/latin1.yaml"], ["latin1.yaml", "not UTF-8", "save the plan as UTF-8"]),
    ("utf16-plan", ["export", "plans/utf16.yaml", "-o", "out"], ["utf16.yaml", "not UTF-8"]),
    ("binary-plan", ["train", "plans/binary_junk.yaml"], ["binary_junk.yaml", "not UTF-8"]),
    ("folder-as-plan", ["train", "plans/a_folder.yaml"], ["a_folder.yaml", "is a folder", "plan .yaml"]),
    ("missing-plan", ["train", "plans/nope.yaml"], ["nope.yaml", "no such file", "preset name"]),
    ("unknown-preset", ["train", "tiny-cpu-dmeo"], ["unknown preset 'tiny-cpu-dmeo'", "did you mean 'tiny-cpu-demo'"]),
]


ARGS = [
    ("unknown-option", [*T, "--no-such-option"], ["zerotui train", "--no-such-option", "zerotui train --help"]),
    ("unknown-command", ["frobnicate"], ["'frobnicate'", "train"]),
    ("bad-choice-stage", [*T, "--stage", "7"], ["--stage", "invalid choice: 7", "0, 1, 2, 3"]),
    ("bad-choice-method", ["estimate", "--method", "dora"], ["--method", "'dora'", "'full', 'lora', 'qlora'"]),
    ("not-an-int", [*T, "--micro-batch", "1.5"], ["--micro-batch", "'1.5'"]),
    ("bad-size-unit", ["estimate", "--gpu-mem", "24QB"], ["--gpu-mem", "'24QB'", "24GiB"]),
    ("bad-size-word", ["fit", "--ram", "lots"], ["--ram", "'lots'", "24GiB"]),
    ("negative-size", ["estimate", "--gpu-mem=-5GiB"], ["--gpu-mem", "'-5GiB'"]),
    ("zero-size", ["fit", "--gpu-mem", "0"], ["--gpu-mem", "24GiB"]),
    ("missing-value", [*T, "--nvme-path"], ["--nvme-path", "expected one argument"]),
    ("missing-required-merge", ["merge"], ["required", "RUN", "-o/--output"]),
    ("missing-required-import", ["import"], ["required", "DS_CONFIG.json"]),
    ("two-sources-positional", ["train", "--preset", "tiny-cpu-demo", "tiny-cpu-demo"], ["one of --preset, --plan",
                                                                                          "pick one"]),
    ("two-sources-flags", ["estimate", "--preset", "tiny-cpu-demo", "--plan", "plans/empty.yaml"],
     ["one of --preset, --plan"]),
    ("resume-with-options", ["train", "--resume", "x", "tiny-cpu-demo"], ["--resume", "own plan.yaml"]),
    ("resume-unknown-run", ["resume", "no-such-run"], ["no run named 'no-such-run'", "zerotui runs"]),
    ("stop-unknown-run", ["stop", "no-such-run"], ["no run named 'no-such-run'"]),
    ("negative-max-steps", [*T, "--max-steps", "-3"], ["field 'max_steps'", "(got -3)"]),
    ("empty-name", [*T, "--name", ""], ["field 'name'", "at least 1 character"]),
    ("gpus-vs-gpu-ids", ["estimate", "--gpus", "2", "--gpu-ids", "0"], ["gpus=2", "gpu_ids=[0]"]),
    ("override-section-shape", [*T, "--ds-overrides", '{"zero_optimization": 3}'],
     ["ds_overrides.zero_optimization", "JSON object", "(got 3)"]),
    ("nvme-path-unwritable", [*T, "--stage", "3", "--offload-params", "nvme", "--nvme-path", "/proc/zerotui-nope"],
     ["NVMe offload folder /proc/zerotui-nope", "not writable", "--nvme-path"]),
    ("runs-dir-is-a-file", [*T, "--runs-dir", "plans/empty.yaml"], ["runs folder plans/empty.yaml", "not writable",
                                                                      "--runs-dir"]),
]


DATA = [
    ("data-empty", [*T, "--data", "data/empty.jsonl"], ["empty.jsonl", "is empty", ".jsonl (one object a line)"]),
    ("data-only-blank-rows", [*T, "--data", "data/only_blank_rows.jsonl"], ["only_blank_rows.jsonl", "is empty"]),
    ("data-latin1", [*T, "--data", "data/latin1.jsonl"], ["latin1.jsonl", "not UTF-8", "line 1", "iconv"]),
    ("data-utf16", [*T, "--data", "data/utf16.txt"], ["utf16.txt", "UTF-16", "iconv -f utf-16"]),
    ("data-binary", [*T, "--data", "data/binary_junk.jsonl"], ["binary_junk.jsonl", "binary", ".jsonl"]),
    ("data-missing-field", [*T, "--data", "data/missing_output.jsonl"], ["missing_output.jsonl", "cannot tell the format",
                                                                        "(instruction)", "instruction/input/output"]),
    ("data-empty-answers", [*T, "--data", "data/empty_outputs.jsonl"], ["no usable alpaca rows out of 2",
                                                                       "'output' is empty", "non-empty"]),
    ("data-unknown-fields", [*T, "--data", "data/unknown_fields.jsonl"], ["(answer, question)", "--data-format"]),
    ("data-mixed-formats", [*T, "--data", "data/mixed_formats.jsonl"], ["no usable chat rows out of 3",
                                                                       "line 2: not valid JSON", "{role, content}"]),
    ("data-csv-named-jsonl", [*T, "--data", "data/csv_named_jsonl.jsonl"], ["none of its 2 rows could be read",
                                                                           "not valid JSON", ".csv (with a header)"]),
    ("data-huge-single-line", [*T, "--data", "data/huge_single_line.jsonl"], ["huge_single_line.jsonl",
                                                                             "none of its 1 rows", "line 1"]),
    ("data-truncated-json", [*T, "--data", "data/truncated.json"], ["truncated.json", "not valid JSON", "line 1",
                                                                   "list of objects"]),
    ("data-single-object", [*T, "--data", "data/single_object.json"], ["single_object.json", "one object",
                                                                      "list of objects"]),
    ("data-csv-no-header", [*T, "--data", "data/no_header.csv"], ["no_header.csv", "(foo, hello world)",
                                                                 "first line must name the columns"]),
    ("data-csv-ragged", [*T, "--data", "data/ragged.csv"], ["ragged.csv", "3 fields, the header has 2"]),
    ("data-not-parquet", [*T, "--data", "data/not_parquet.parquet"], ["not_parquet.parquet", "not a readable parquet",
                                                                     "to_parquet"]),
    ("data-parquet-torn", [*T, "--data", "data/real_parquet_magic_then_junk.parquet"],
     ["real_parquet_magic_then_junk.parquet", "not a readable parquet"]),
    ("data-unknown-type", [*T, "--data", "data/spreadsheet.xlsx"], ["spreadsheet.xlsx", "unknown type '.xlsx'", ".csv"]),
    ("data-folder", [*T, "--data", "data/a_folder.jsonl"], ["a_folder.jsonl", "is a folder", ".jsonl"]),
    ("data-missing", [*T, "--data", "data/nope.jsonl"], ["nope.jsonl", "does not exist", ".jsonl"]),
    ("data-chat-no-assistant", [*T, "--data", "data/chat_without_assistant.jsonl"], ["no usable chat rows",
                                                                                    "no assistant message"]),
    ("data-chat-unknown-role", [*T, "--data", "data/chat_unknown_role.jsonl"], ["no known role", "{role, content}"]),
    ("data-text-not-string", [*T, "--data", "data/text_not_string.jsonl"], ["'text' is not text",
                                                                           "non-empty 'text' field"]),
    ("data-format-mismatch", [*T, "--data", "data/text_rows.jsonl", "--data-format", "alpaca"],
     ["no usable alpaca rows", "missing 'instruction'", "'instruction' and 'output'"]),
    ("data-fewer-rows-than-batch", [*T, "--data", "data/text_rows.jsonl"], ["text_rows.jsonl", "micro-batch of 8",
                                                                           "smaller --micro-batch"]),
    ("data-hub-without-id", [*T, "--data", "hub:"], ["'hub:' names no dataset", "hub:tatsu-lab/alpaca"]),
]


MODELS = [
    ("model-no-config", [*T, "--model", "models/no_config"], ["models/no_config", "no config.json", "next to the weights"]),
    ("model-config-not-json", [*T, "--model", "models/config_not_json"], ["config_not_json/config.json",
                                                                         "not valid JSON", "line 1"]),
    ("model-config-a-list", ["estimate", "--model", "models/config_list"], ["config_list/config.json", "list",
                                                                           "JSON object"]),
    ("model-config-no-type", [*T, "--model", "models/config_no_model_type"], ["has no model_type", "\"llama\""]),
    ("model-no-weights", [*T, "--model", "models/no_weights"], ["models/no_weights", "no weights",
                                                               "--model-config"]),
    ("model-no-tokenizer", [*T, "--model", "models/no_tokenizer"], ["models/no_tokenizer", "no tokenizer files"]),
    ("model-unknown-arch", [*T, "--model", "models/unknown_arch"], ["'zz-made-up-arch'", "not an architecture",
                                                                   "check model_type"]),
    ("model-unknown-arch-estimate", ["estimate", "--model", "models/unknown_arch"], ["'zz-made-up-arch'"]),
    ("model-file-not-folder", [*T, "--model", "models/a_file_not_a_folder"], ["a_file_not_a_folder", "is a file",
                                                                             "config.json and the weights"]),
    ("model-weights-file", ["estimate", "--model", "models/weights_file.safetensors"], ["weights_file.safetensors",
                                                                                       "is a file"]),
    ("model-adapter-only", [*T, "--model", "models/adapter_only"], ["adapter_only", "no config.json", "LoRA adapter"]),
    ("model-missing-folder", [*T, "--model", "./models/nope"], ["models/nope", "does not exist", "hub id"]),
    ("model-unknown-name", ["estimate", "--model", "llama-9-9b"], ["llama-9-9b", "not a known architecture",
                                                                   "llama-2-7b"]),
    ("model-planning-only", [*T, "--model", "llama-2-7b"], ["'llama-2-7b'", "planning", "hub id"]),
    ("model-remote-code", [*T, "--model", "models/custom_code"], ["custom_code", "auto_map", "--trust-remote-code"]),
    ("model-config-flag-not-json", ["estimate", "--model-config", "models/config_not_json/config.json"],
     ["config_not_json/config.json", "not valid JSON"]),
]


CASES = PLANS + ARGS + DATA + MODELS


def test_the_corpus_is_large_and_every_case_is_distinct():
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)
    assert len({tuple(c[1]) for c in CASES}) == len(CASES)


@pytest.mark.parametrize("argv, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line_exit_2_nothing_written(corpus, argv, words):
    before = snapshot(corpus)
    r = zerotui(corpus, *argv)
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("zerotui"), lines[0]
    assert r.stdout == "", r.stdout
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert_unchanged(before, snapshot(corpus))
