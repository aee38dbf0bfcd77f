"""Parts of the training loop, without an engine: the LR schedule, the live fp16 loss scale on
DeepSpeed's own optimizer objects and its watch, the FLOP formula, the precision check.
"""
from __future__ import annotations

import pytest
import torch

from zerotui.core.model.flops import flops_per_token
from zerotui.core.train.lossscale import ScaleWatch, live_loss_scale, loss_scale_is_dynamic
from zerotui.core.train.schedule import lr_factor


def test_warmup_then_cosine_reaches_the_floor_on_the_last_step():
    f = [lr_factor(s, 10, 2, "cosine", 0.1) for s in range(1, 11)]
    assert f[0] == pytest.approx(0.5) and f[1] == pytest.approx(1.0)  # warm-up: step 1 already trains
    assert f[2] == pytest.approx(1.0) and f[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(f[1:], f[2:]))  # never rises after warm-up
    mid = lr_factor(6, 10, 2, "cosine", 0.0)
    assert 0.3 < mid < 0.7


def test_linear_and_constant_schedules():
    assert [round(lr_factor(s, 5, 0, "linear", 0.0), 3) for s in range(1, 6)] == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert {lr_factor(s, 5, 0, "constant", 0.0) for s in range(1, 6)} == {1.0}


def test_lambda_scheduler_steps_once_per_optimizer_step():
    from types import SimpleNamespace

    from zerotui.core.train.schedule import build_scheduler

    plan = SimpleNamespace(warmup_steps=0, lr_schedule="linear", min_lr_ratio=0.0, lr=1.0)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = build_scheduler(opt, plan, 5)
    seen = []
    for _ in range(5):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])


def test_live_loss_scale_of_the_stage0_fp16_optimizer_follows_overflows():
    """DeepSpeed refuses fp16 on this CPU ('Type fp16 is not supported'), so the optimizer is built
    directly: the scale lives in loss_scale_config.cur_scale since 0.18.6."""
    from deepspeed.runtime.fp16.fused_optimizer import FP16_Optimizer

    lin = torch.nn.Linear(4, 4).half()
    fo = FP16_Optimizer(torch.optim.AdamW(lin.parameters(), lr=1e-3), static_loss_scale=1.0,
                        dynamic_loss_scale=True, initial_dynamic_scale=2**16,
                        dynamic_loss_args={"init_scale": 2**16, "scale_window": 1000, "min_scale": 1,
                                           "delayed_shift": 1, "consecutive_hysteresis": False})
    assert live_loss_scale(fo, "fp16") == 2**16
    for p in lin.parameters():
        p.grad = torch.full_like(p, float("inf"))
    fo.step()
    assert fo.overflow and live_loss_scale(fo, "fp16") == 2**15  # live, after the overflow
    assert live_loss_scale(fo, "bf16") is None
    # and its kind, from loss_scale_config too (None here until 2026-12-06: the stage-0 rows read no kind)
    assert loss_scale_is_dynamic(fo, "fp16") is True
    static = FP16_Optimizer(torch.optim.AdamW(torch.nn.Linear(4, 4).half().parameters(), lr=1e-3),
                            static_loss_scale=128.0, dynamic_loss_scale=False)
    assert loss_scale_is_dynamic(static, "fp16") is False and live_loss_scale(static, "fp16") == 128.0


@pytest.mark.parametrize("module,cls", [("deepspeed.runtime.zero.stage_1_and_2", "DeepSpeedZeroOptimizer"),
                                        ("deepspeed.runtime.zero.stage3", "DeepSpeedZeroOptimizer_Stage3")])
def test_live_loss_scale_of_zero_optimizers(module, cls):
    """The ZeRO optimizers' own ``loss_scale`` property over their DynamicLossScaler (no engine needed)."""
    import importlib

    from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler

    opt = object.__new__(getattr(importlib.import_module(module), cls))
    opt.custom_loss_scaler = False
    opt.loss_scaler = DynamicLossScaler(init_scale=1024, scale_window=1000, min_scale=1, delayed_shift=1,
                                        consecutive_hysteresis=False)
    assert live_loss_scale(opt, "fp16") == 1024
    opt.loss_scaler.cur_scale /= 2  # what update_scale(overflow=True) does (it needs a process group)
    assert live_loss_scale(opt, "fp16") == 512


def test_scale_watch_alerts_once_near_the_floor_and_again_after_recovery():
    w = ScaleWatch(min_scale=1.0, initial=65536.0)
    assert w.check(65536.0, 0) is None and w.check(None) is None
    assert w.check(1024.0, skipped_in_interval=3) is None  # fell, but far from the floor
    alert = w.check(4.0, skipped_in_interval=4)
    assert alert["kind"] == "loss_scale_collapse" and "7 optimizer step(s) skipped" in alert["message"]
    assert "fell from 65536 to 4" in alert["message"] and "bf16" in alert["hint"]
    assert w.check(2.0) is None  # still down there: no repeat
    assert w.check(64.0) is None and w.check(4.0) is not None


def test_a_static_scale_is_never_a_collapse():
    """DeepSpeed's static LossScaler (scale 1 when it thinks the weights are not fp16) must not raise the
    collapse alert: it did not fall from anywhere."""
    assert ScaleWatch(min_scale=1.0, initial=65536.0).check(1.0, 0, dynamic=False) is None
    # A dynamic scale that starts at the floor (initial_scale_power 0) has not fallen either.
    assert ScaleWatch(min_scale=1.0, initial=1.0).check(1.0, 5, dynamic=True) is None


def test_the_kind_of_scale_is_read_from_deepspeeds_scalers():
    from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler, LossScaler

    class Opt:
        pass

    opt = Opt()
    opt.loss_scaler = DynamicLossScaler(init_scale=1024, scale_window=1000, min_scale=1, delayed_shift=1,
                                        consecutive_hysteresis=False)
    assert loss_scale_is_dynamic(opt, "fp16") is True and loss_scale_is_dynamic(opt, "bf16") is None
    opt.loss_scaler = LossScaler(scale=1.0)
    assert loss_scale_is_dynamic(opt, "fp16") is False


def test_flops_per_token_is_6n_plus_attention_and_counts_recompute_and_lora():
    n, layers, h, s = 1_000_000, 4, 128, 64
    full = flops_per_token(n, n, layers, h, s, lora=False, recompute=False)
    assert full == 6 * n + 12 * layers * h * s
    assert flops_per_token(n, n, layers, h, s, lora=False, recompute=True) == full + 2 * n + 4 * layers * h * s
    lora = flops_per_token(n, 1000, layers, h, s, lora=True, recompute=False)
    assert lora == 4 * n + 2 * 1000 + 12 * layers * h * s  # no weight gradients for the frozen base


class _Accelerator:
    def __init__(self, fp16: bool, bf16: bool) -> None:
        self.fp16, self.bf16 = fp16, bf16

    def is_fp16_supported(self) -> bool:
        return self.fp16

    def is_bf16_supported(self) -> bool:
        return self.bf16

    def device_name(self) -> str:
        return "cpu"


def test_a_precision_the_device_lacks_is_refused_with_one_that_it_has():
    from zerotui.core.errors import HardwareError
    from zerotui.core.plan.schema import Plan
    from zerotui.core.train.engine import check_precision

    with pytest.raises(HardwareError) as err:
        check_precision(Plan(precision="fp16"), _Accelerator(fp16=False, bf16=True))
    assert "fp16 training is not supported on this cpu device" in err.value.message
    assert err.value.hint == "use --precision bf16"
    with pytest.raises(HardwareError) as err:
        check_precision(Plan(precision="bf16"), _Accelerator(fp16=False, bf16=False))
    assert err.value.hint == "use --precision fp32"
    check_precision(Plan(precision="fp16"), _Accelerator(fp16=True, bf16=False))  # supported: no error
    check_precision(Plan(precision="fp32"), _Accelerator(fp16=False, bf16=False))
