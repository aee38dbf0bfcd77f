"""Measure configurations in one process: build, deepspeed.initialize, a few steps, record, tear down.

Run by sweep.py (``python -m benchmarks.estimator.worker JOB.json``); each record is appended as one JSON
line to the job's results file as soon as it is known, and ``current.json`` says which configuration is
running so the parent can enforce the per-configuration time limit. After any failure the worker exits
(code 3): the parent starts a fresh process for the rest, so an OOM never pollutes later rows.

What is measured per configuration (GPU):
- ``torch.cuda.max_memory_allocated/reserved`` per phase (forward, backward, engine.step) of every
  micro-step, after resetting the peak at the start of each phase; the row's peak is the maximum over
  all steps (rows before sweep 4 got Adam's moments lazily at the first step, so it is included; since
  sweep 4 they are made before it, as zerotui does);
- nvidia-smi's view (NVML used memory, sampled every 20 ms) for the CUDA context and caching overhead;
- host: peak RSS (VmHWM, reset per configuration through /proc/self/clear_refs) and a sampled peak;
- step time (synchronised wall clock) of every optimizer step after the first, and tokens/s.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.estimator.paths import ensure_zerotui_importable  # noqa: E402

ensure_zerotui_importable()

from zerotui.core.train.distributed import free_port  # noqa: E402


def _read_status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # "5" resets the peak RSS (VmHWM), Linux >= 4.0 (man 5 proc)
        return True
    except OSError:
        return False


class Sampler:
    """Background thread: peak RSS and peak NVML used memory while a configuration runs."""

    def __init__(self, nvml_handle) -> None:
        self.h = nvml_handle
        self.rss_peak = 0
        self.nvml_peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _nvml_used(self) -> int:
        if self.h is None:
            return 0
        import pynvml

        return int(pynvml.nvmlDeviceGetMemoryInfo(self.h).used)

    def reset(self) -> None:
        self.rss_peak = _rss_now()
        self.nvml_peak = self._nvml_used()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            try:
                self.rss_peak = max(self.rss_peak, _rss_now())
                self.nvml_peak = max(self.nvml_peak, self._nvml_used())
            except Exception:  # a sampling hiccup must never end the measurement
                pass

    def stop(self) -> None:
        self._stop.set()


def _counts(model) -> dict[str, int]:
    """Parameter counts the way DeepSpeed's estimators take them (model_to_params; largest layer =
    most parameters held directly by one module, as estimate_zero3_model_states_mem_needs_all_live)."""
    seen: dict[int, int] = {}
    trainable = 0
    for p in model.parameters():
        n = p.ds_numel if hasattr(p, "ds_numel") else p.numel()
        if id(p) not in seen:
            seen[id(p)] = n
            if p.requires_grad:
                trainable += n
    largest_layer = 0
    largest_param = 0
    for m in model.modules():
        own = [p.ds_numel if hasattr(p, "ds_numel") else p.numel() for p in m.parameters(recurse=False)]
        if own:
            largest_layer = max(largest_layer, sum(own))
            largest_param = max(largest_param, max(own))
    return {"params_total": sum(seen.values()), "params_trainable": trainable,
            "largest_layer_params": largest_layer, "largest_param_numel": largest_param}


def _deepspeed_estimates(plan, counts: dict[str, int]) -> dict[str, Any]:
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    total, largest = counts["params_total"], counts["largest_layer_params"]
    if plan.stage == 3:
        cpu, gpu, _ = estimate_zero3_model_states_mem_needs(
            total, largest, num_gpus_per_node=1, num_nodes=1,
            cpu_offload=plan.offload_optimizer != "none", cpu_offload_params=plan.offload_params != "none",
            zero_init=plan.zero_init)
        return {"function": "estimate_zero3_model_states_mem_needs", "gpu_bytes": gpu, "cpu_bytes": cpu}
    cpu, gpu = estimate_zero2_model_states_mem_needs(total, num_gpus_per_node=1, num_nodes=1,
                                                     cpu_offload=plan.offload_optimizer != "none")
    return {"function": "estimate_zero2_model_states_mem_needs", "gpu_bytes": gpu, "cpu_bytes": cpu}


def run_config(cfg: dict[str, Any], device: str, sampler: Sampler, rec: dict[str, Any]) -> dict[str, Any]:
    """Measure one configuration into ``rec`` (filled as it goes, so a failure keeps what was learnt)."""
    import deepspeed
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from benchmarks.estimator.dsconf import harness_ds_config
    from benchmarks.estimator.matrix import llama_config_dict
    from zerotui.core.plan.schema import plan_from_dict

    cuda = device == "cuda"
    plan = plan_from_dict(cfg["plan"])
    shape = llama_config_dict(cfg["shape"])
    ds_config, ds_source = harness_ds_config(plan, SimpleNamespace(hidden_size=shape["hidden_size"],
                                                                   largest_param_numel=0))
    if not cuda and "optimizer" in ds_config and plan.offload_optimizer == "none":
        # The CPU accelerator has no FusedAdam: the dry run takes PyTorch's AdamW everywhere.
        ds_config["optimizer"]["params"].update(torch_adam=True)
        ds_config["optimizer"]["params"].pop("fused", None)
        ds_config["zero_allow_untested_optimizer"] = True
    rec.update(ds_config=ds_config, ds_config_source=ds_source, phase="build")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[plan.precision]
    config = LlamaConfig(**{k: v for k, v in shape.items() if k not in ("architectures", "model_type")})
    config._attn_implementation = plan.attention
    config.use_cache = False

    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        rec["baseline_allocated"] = torch.cuda.memory_allocated()
        rec["baseline_reserved"] = torch.cuda.memory_reserved()
    rec["hwm_reset"] = _reset_hwm()
    rec["rss_start"] = _rss_now()
    sampler.reset()
    rec["nvml_used_start"] = sampler.nvml_peak

    t0 = time.perf_counter()
    if plan.stage == 3 and plan.zero_init:
        # What from_pretrained does under a stage-3 config: build already partitioned, never whole.
        with deepspeed.zero.Init(config_dict_or_path=ds_config, dtype=dtype):
            model = LlamaForCausalLM(config)
        # Under zero.Init, Hugging Face's _init_weights runs on already-partitioned (empty) tensors, so
        # the embeddings keep nn.Embedding's N(0, 1): logits in the hundreds and fp16 overflow. Give the
        # embedding and the head the usual N(0, 0.02) (gathered one at a time: one tensor of memory).
        for mod in (model.get_input_embeddings(), model.get_output_embeddings()):
            with deepspeed.zero.GatheredParameters([mod.weight], modifier_rank=0):
                with torch.no_grad():
                    mod.weight.normal_(0.0, 0.02)
        rec["host_staging"] = "zero.Init"
    else:
        # Initialise on the device (fast), then hold the 16-bit model on the host as from_pretrained
        # leaves it, so host RAM sees the same load-time copy as a real run.
        with torch.device(device):
            model = LlamaForCausalLM._from_config(config, dtype=dtype)
        if cuda:
            model.to("cpu")
            torch.cuda.empty_cache()
        rec["host_staging"] = "model on host, 16-bit"
    if plan.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if plan.method == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=plan.lora_r, lora_alpha=plan.lora_alpha,
                                                 lora_dropout=plan.lora_dropout,
                                                 target_modules=list(plan.lora_targets), task_type="CAUSAL_LM"),
                               autocast_adapter_dtype=False)  # adapters in the training dtype (see docs)
        if plan.grad_ckpt:
            model.enable_input_require_grads()  # as core/model/load.py does for LoRA + checkpointing
    rec["counts"] = _counts(model)
    rec["deepspeed_estimate"] = _deepspeed_estimates(plan, rec["counts"])
    rec["build_s"] = time.perf_counter() - t0
    rec["phase"] = "initialize"

    t0 = time.perf_counter()
    engine, _, _, _ = deepspeed.initialize(model=model, config=ds_config,
                                           model_parameters=[p for p in model.parameters() if p.requires_grad])
    del model
    # Adam's state before the first step, as zerotui's engine makes it (rows without this field, sweeps
    # 1-3, had torch's lazy state); init_s includes it
    from zerotui.core.train.optimizer_state import make_optimizer_states

    rec["optimizer_states_made"] = make_optimizer_states(engine.optimizer)
    rec["init_s"] = time.perf_counter() - t0
    rec["optimizer"] = f"{type(engine.optimizer).__name__}({type(getattr(engine, 'basic_optimizer', None)).__name__})"
    if cuda:
        torch.cuda.synchronize()
        rec["after_init_allocated"] = torch.cuda.memory_allocated()
    rec["rss_after_init"] = _rss_now()
    rec["phase"] = "train"

    vocab = shape["vocab_size"]
    gen = torch.Generator(device="cpu").manual_seed(0)
    engine.train()
    micro: list[dict[str, Any]] = []
    step_times: list[float] = []
    losses: list[float] = []
    for step in range(plan.max_steps or 3):
        if cuda:
            torch.cuda.synchronize()
        ts = time.perf_counter()
        for m in range(plan.grad_accum):
            ids = torch.randint(0, vocab, (plan.micro_batch, plan.seq_len), generator=gen).to(engine.device)
            row: dict[str, Any] = {"step": step, "micro": m}
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            out = engine(input_ids=ids, labels=ids)
            loss = out.loss
            del out  # only the loss is kept, as a training loop does: the logits go now
            if cuda:
                row["fwd_peak"] = torch.cuda.max_memory_allocated()
                row["after_fwd"] = torch.cuda.memory_allocated()
                row["fwd_reserved"] = torch.cuda.max_memory_reserved()
                torch.cuda.reset_peak_memory_stats()
            engine.backward(loss)
            if cuda:
                row["bwd_peak"] = torch.cuda.max_memory_allocated()
                row["after_bwd"] = torch.cuda.memory_allocated()
                row["bwd_reserved"] = torch.cuda.max_memory_reserved()
                torch.cuda.reset_peak_memory_stats()
            engine.step()
            if cuda:
                row["step_peak"] = torch.cuda.max_memory_allocated()
                row["after_step"] = torch.cuda.memory_allocated()
                row["step_reserved"] = torch.cuda.max_memory_reserved()
            micro.append(row)
        losses.append(float(loss.detach().float().item()))
        del loss
        if cuda:
            torch.cuda.synchronize()
        step_times.append(time.perf_counter() - ts)
    rec["micro_steps"] = micro
    rec["step_times"] = step_times
    rec["losses"] = losses
    rec["skipped_steps"] = int(getattr(engine, "skipped_steps", 0))
    timed = sorted(step_times[1:] or step_times)
    # With 3+ timed steps the median; with 2 the faster (the first timed step of stage 3 re-records
    # its parameter trace and can take 3x as long).
    rec["step_time"] = timed[len(timed) // 2] if len(timed) >= 3 else timed[0]
    rec["tokens_per_s"] = plan.micro_batch * plan.grad_accum * plan.seq_len / rec["step_time"]
    if cuda:
        keys = ("fwd_peak", "bwd_peak", "step_peak")
        rec["peak_allocated"] = max(r[k] for r in micro for k in keys)
        rec["peak_allocated_after_first_step"] = max(
            (r[k] for r in micro if r["step"] > 0 for k in keys), default=None)
        rec["peak_reserved"] = max(r[k] for r in micro for k in ("fwd_reserved", "bwd_reserved", "step_reserved"))
        rec["steady_allocated"] = micro[-1]["after_step"]
    rec["rss_peak"] = _read_status_kb("VmHWM")
    import peft
    import transformers

    rec["versions"] = {"torch": torch.__version__, "cuda": torch.version.cuda, "deepspeed": deepspeed.__version__,
                       "transformers": transformers.__version__, "peft": peft.__version__,
                       "gpu": torch.cuda.get_device_name(0) if cuda else "cpu"}
    rec["rss_peak_sampled"] = sampler.rss_peak
    rec["nvml_used_peak"] = sampler.nvml_peak
    rec["phase"] = "teardown"
    try:
        engine.destroy()
    except Exception:
        pass
    del engine
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        try:
            torch._C._host_emptyCache()  # pinned host blocks cached by PyTorch
        except Exception:
            pass
    rec["phase"] = "done"
    rec["status"] = "ok"
    return rec


def _setup(device: str):
    """NVML, the one-rank process group and the device: what every measuring process needs first."""
    nvml = None
    if device == "cuda":
        try:
            import pynvml

            pynvml.nvmlInit()
            nvml = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:
            nvml = None
    import deepspeed
    import torch

    deepspeed.init_distributed(dist_backend="nccl" if device == "cuda" else "gloo")
    if device == "cuda":
        torch.cuda.set_device(0)
    return Sampler(nvml)


def _measure(cfg: dict[str, Any], device: str, sampler: Sampler, results: Path, alloc_conf: str) -> int:
    """One configuration, its row appended to ``results``; 3 when it failed (the process is then spent)."""
    import torch

    t0 = time.perf_counter()
    rec: dict[str, Any] = {}
    code = 0
    try:
        run_config(cfg, device, sampler, rec)
    except BaseException as err:  # noqa: BLE001 — every failure becomes a row, then a fresh process
        oom = isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()
        rec.update(status="oom" if oom else "error", error=f"{type(err).__name__}: {err}"[:2000],
                   traceback=traceback.format_exc()[-3000:])
        if device == "cuda":
            rec["oom_peak_allocated"] = torch.cuda.max_memory_allocated()
        code = 3
    rec.update(id=cfg["id"], shape=cfg["shape"], plan=cfg["plan"], group=cfg.get("group", ""),
               wall_s=time.perf_counter() - t0, worker_pid=os.getpid(), alloc_conf=alloc_conf)
    with results.open("a") as f:
        f.write(json.dumps(rec, default=str) + "\n")
        f.flush()
    return code


def _teardown(sampler: Sampler) -> None:
    import torch

    sampler.stop()
    try:
        torch.distributed.destroy_process_group()
    except Exception:
        pass


def _child(fn) -> int:
    """Fork; the child runs ``fn`` and never returns here: its exit code is what ``fn`` returned (1 when it
    raised, its traceback going to the worker's log). The parent gets the child's exit code, negative
    for a signal (``os.waitstatus_to_exitcode``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            result = fn()
            code = result if isinstance(result, int) else 1
        except BaseException:  # noqa: BLE001 — the child's failure is reported by its exit code
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _cuda_probe() -> int:
    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda")
    return 0


def _fork_each(job: dict[str, Any], results: Path, current: Path) -> int:
    """Every configuration in a child forked from this process, which has done the slow imports but not
    initialised CUDA: each row starts as fresh as a new process (its own CUDA context, allocator and
    process group) without paying the imports again. A child that dies without writing its row gets a
    'crash' row here and the next configuration goes on. When a forked child cannot use CUDA (something
    initialised it on import), one configuration is measured here, unforked, and the rest are left to a
    new worker (sweep.py starts one): still one process per row, only slower."""
    device = job["device"]
    # torch.cuda.is_available() (DeepSpeed calls it on import) asks NVML instead of initialising CUDA.
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import logging

    import torch  # noqa: F401
    from transformers import LlamaForCausalLM  # noqa: F401

    alloc_conf = job.get("alloc_conf", "")
    if device == "cuda" and _child(_cuda_probe) != 0:
        print("a forked child cannot use CUDA here: one configuration in this process", flush=True)
        return _in_process(job["configs"][:1], device, results, current, alloc_conf)

    def deepspeed_then_probe() -> int:
        import deepspeed  # noqa: F401

        return _child(_cuda_probe) if device == "cuda" else 0

    # DeepSpeed's import (its accelerator, its ops) is imported here only when a child forked after it
    # can still use CUDA; otherwise each child imports it for itself.
    ds_here = _child(deepspeed_then_probe) == 0
    if ds_here:
        import deepspeed

        deepspeed.utils.logger.setLevel(logging.WARNING)
    print(f"DeepSpeed imported before forking: {ds_here}", flush=True)
    crashes = 0
    for cfg in job["configs"]:
        current.write_text(json.dumps({"id": cfg["id"], "start": time.time()}))

        def one(cfg=cfg) -> int:
            import deepspeed

            deepspeed.utils.logger.setLevel(logging.WARNING)
            os.environ["MASTER_PORT"] = str(free_port())
            sampler = _setup(device)
            code = _measure(cfg, device, sampler, results, alloc_conf)
            _teardown(sampler)
            return code

        code = _child(one)
        written = {json.loads(x)["id"] for x in results.read_text().splitlines() if x.strip()}
        if cfg["id"] not in written:
            with results.open("a") as f:
                f.write(json.dumps({"id": cfg["id"], "shape": cfg["shape"], "plan": cfg["plan"],
                                    "group": cfg.get("group", ""), "status": "crash",
                                    "error": f"measuring process ended with exit code {code}"}) + "\n")
            crashes += 1
            if crashes == 3:  # something every row shares is broken: sweep.py stops on three in a row
                break
        else:
            crashes = 0
    current.write_text(json.dumps({"id": None}))
    return 0


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text())
    device = job["device"]
    results = Path(job["results"])
    current = Path(job["current"])
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(job["port"]))
    if job.get("fork_each"):
        return _fork_each(job, results, current)
    return _in_process(job["configs"], device, results, current, job.get("alloc_conf", ""))


def _in_process(configs: list[dict[str, Any]], device: str, results: Path, current: Path, alloc_conf: str) -> int:
    """``configs`` one after another in this process, until one fails (3: the process is then spent)."""
    import logging

    import deepspeed

    deepspeed.utils.logger.setLevel(logging.WARNING)
    sampler = _setup(device)
    code = 0
    for cfg in configs:
        current.write_text(json.dumps({"id": cfg["id"], "start": time.time()}))
        code = _measure(cfg, device, sampler, results, alloc_conf)
        if code:
            break
    current.write_text(json.dumps({"id": None}))
    _teardown(sampler)
    return code


if __name__ == "__main__":
    sys.exit(main())
