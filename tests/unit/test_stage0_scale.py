"""core/train/stage0_scale.py with real autograd and a stand-in optimizer that holds a scale the way
DeepSpeed's stage-0 FP16_Optimizer does (``loss_scale_config.cur_scale``)."""
from types import SimpleNamespace

import pytest
import torch

from zerotui.core.train.stage0_scale import scaled_for_backward


def opt(scale):
    return SimpleNamespace(loss_scale_config=SimpleNamespace(cur_scale=scale))


def graph(dtype=torch.float32):
    w = torch.tensor([1.5, -2.0], dtype=dtype, requires_grad=True)
    return w, (w * w).sum()  # d loss / d w = 2w


@pytest.mark.parametrize("gas", [1, 3, 4])
def test_the_scale_goes_in_where_deepspeed_only_divided_by_the_accumulation(gas):
    w, loss = graph()
    wrapped = scaled_for_backward(loss, opt(1024.0), "fp16", gas)
    assert float(wrapped) == float(loss)  # the value logged and returned is the loss itself
    (wrapped / gas).backward()  # what DeepSpeed 0.19.8's engine.backward does at stage 0
    assert torch.allclose(w.grad, 2 * w.detach() * 1024.0 / gas)


def test_a_loss_deepspeed_already_scaled_is_not_scaled_again():
    w, loss = graph()
    (scaled_for_backward(loss, opt(1024.0), "fp16", 4) / 4 * 1024.0).backward()  # ZeRO's scale_if_loss
    assert torch.allclose(w.grad, 2 * w.detach() * 1024.0 / 4)


def test_a_scale_past_fp16_range_overflows_the_16_bit_gradients_as_deepspeeds_own_scaling_would():
    w, loss = graph(torch.float16)
    scaled_for_backward(loss, opt(2.0 ** 32), "fp16", 1).backward()
    assert torch.isinf(w.grad).all()


@pytest.mark.parametrize("precision,scale", [("bf16", 1024.0), ("fp32", 1024.0), ("fp16", 1.0), ("fp16", None)])
def test_nothing_to_scale_returns_the_loss_itself(precision, scale):
    _, loss = graph()
    o = opt(scale) if scale else SimpleNamespace()
    assert scaled_for_backward(loss, o, precision, 2) is loss
