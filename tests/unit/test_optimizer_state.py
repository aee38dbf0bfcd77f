"""core/train/optimizer_state.py without DeepSpeed: which optimizers get their state up front, and what it is
(tests/deepspeed/test_optimizer_states.py runs it on DeepSpeed's engines)."""
import torch

from zerotui.core.train.optimizer_state import base_optimizer, make_optimizer_states


class Wrapper:  # how DeepSpeed's optimizers keep the one they wrap
    def __init__(self, optimizer):
        self.optimizer = optimizer


def _params():
    torch.manual_seed(0)
    return list(torch.nn.Linear(16, 8).parameters())


def test_adamw_under_wrappers_gets_torchs_state_and_the_weights_are_untouched():
    params = _params()
    weights = [p.detach().clone() for p in params]
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.5)
    assert base_optimizer(Wrapper(Wrapper(opt))) is opt
    assert make_optimizer_states(Wrapper(Wrapper(opt))) == 8 * (16 * 8 + 8)
    for p in params:
        state = opt.state[p]
        assert torch.count_nonzero(state["exp_avg"]) == 0 and state["exp_avg_sq"].shape == p.shape
        assert float(state["step"]) == 0.0 and p.grad is None
    assert all(torch.equal(p, w) for p, w in zip(params, weights))
    assert make_optimizer_states(opt) == 0  # made once


def test_a_parameter_that_already_has_state_keeps_it():
    params = _params()
    opt = torch.optim.Adam(params, lr=1e-2)
    params[0].grad = torch.ones_like(params[0])
    opt.step()
    params[0].grad = None
    kept = opt.state[params[0]]["exp_avg"].clone()
    assert make_optimizer_states(opt) == 8 * params[1].numel()
    assert torch.equal(opt.state[params[0]]["exp_avg"], kept) and float(opt.state[params[0]]["step"]) == 1.0


def test_other_optimizers_and_unknown_torch_internals_are_left_alone():
    params = _params()
    sgd = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    assert make_optimizer_states(sgd) == 0 and not sgd.state

    class OtherAdam(torch.optim.AdamW):  # a torch whose _init_group takes other arguments
        def _init_group(self, group, params, grads):
            raise AssertionError("must not be called")

    other = OtherAdam(params, lr=0.1)
    assert make_optimizer_states(other) == 0 and not other.state


def test_a_failure_halfway_leaves_no_partial_state(monkeypatch):
    """An out-of-memory inside torch's _init_group must not leave a parameter with half its state (the
    step would then fail on the missing moment): nothing is left, and the optimizer makes it at its step."""
    params = _params()
    opt = torch.optim.AdamW(params, lr=1e-2)
    real = torch.zeros_like
    calls = {"n": 0}

    def failing(t, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:  # the first parameter's exp_avg_sq... or the second's exp_avg
            raise torch.OutOfMemoryError("CUDA out of memory (test)")
        return real(t, *a, **k)

    monkeypatch.setattr(torch, "zeros_like", failing)
    try:
        make_optimizer_states(opt)
    except torch.OutOfMemoryError:
        pass
    else:
        raise AssertionError("the failure was swallowed")
    monkeypatch.setattr(torch, "zeros_like", real)
    assert not any(opt.state.get(p) for p in params) and all(p.grad is None for p in params)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()  # the lazy path still works
    assert all(float(opt.state[p]["step"]) == 1.0 for p in params)
