"""poptorch.optim: SGD, Adam and AdamW as PopTorch names them.

They are torch.optim's optimizers (same arguments, same semantics), so a
model can be trained with either; poptorch.trainingModel also accepts
torch.optim.SGD, Adam and AdamW themselves and reads their
hyper-parameters. The update runs on the IPU Model, inside the compiled
program (tessera::passes optimizers, which follow PyTorch's formulas).
"""

import torch.optim

import popart

__all__ = ["SGD", "Adam", "AdamW"]


class SGD(torch.optim.SGD):
    """torch.optim.SGD; loss_scaling is accepted as PopTorch's keyword but
    float32 training needs none, so only 1.0 (or None) is taken."""

    def __init__(self, params, lr, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, loss_scaling=None):
        _check_loss_scaling(loss_scaling)
        super().__init__(params, lr=lr, momentum=momentum,
                         dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov)


class Adam(torch.optim.Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, amsgrad=False, loss_scaling=None):
        _check_loss_scaling(loss_scaling)
        super().__init__(params, lr=lr, betas=betas, eps=eps,
                         weight_decay=weight_decay, amsgrad=amsgrad)


class AdamW(torch.optim.AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2, amsgrad=False, loss_scaling=None):
        _check_loss_scaling(loss_scaling)
        super().__init__(params, lr=lr, betas=betas, eps=eps,
                         weight_decay=weight_decay, amsgrad=amsgrad)


def _check_loss_scaling(value):
    if value is not None and float(value) != 1.0:
        raise ValueError(f"loss_scaling={value}: Tessera trains in float32, "
                         "where loss scaling is not needed; leave it out")


def _one_group(optimizer):
    groups = optimizer.param_groups
    keys = [k for k in groups[0] if k != "params"]
    for g in groups[1:]:
        for k in keys:
            if g.get(k) != groups[0][k]:
                raise ValueError(
                    f"{type(optimizer).__name__}: parameter groups with "
                    f"different {k} ({groups[0][k]} and {g.get(k)}) are not "
                    "supported; use one set of hyper-parameters")
    return groups[0]


def to_popart(optimizer):
    """The popart optimizer with optimizer's hyper-parameters
    (a torch.optim.SGD, Adam or AdamW, including poptorch.optim's)."""
    g = _one_group(optimizer)
    name = type(optimizer).__name__
    if isinstance(optimizer, torch.optim.SGD):
        sgd = popart.SGD({
            "defaultLearningRate": (g["lr"], False),
            "defaultMomentum": (g.get("momentum", 0.0), False),
            "defaultDampening": (g.get("dampening", 0.0), False),
            "defaultWeightDecay": (g.get("weight_decay", 0.0), False)})
        sgd.params["nesterov"] = bool(g.get("nesterov", False))
        return sgd
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        if g.get("amsgrad"):
            raise ValueError(f"{name}(amsgrad=True) is not supported; use "
                             "amsgrad=False")
        # torch's Adam adds the decay to the gradient; AdamW decays the
        # weight itself.
        mode = (popart.WeightDecayMode.Decay
                if isinstance(optimizer, torch.optim.AdamW)
                else popart.WeightDecayMode.L2Regularization)
        beta1, beta2 = g["betas"]
        return popart.Adam({
            "defaultLearningRate": (g["lr"], False),
            "defaultBeta1": (beta1, False), "defaultBeta2": (beta2, False),
            "defaultEps": (g["eps"], False),
            "defaultWeightDecay": (g.get("weight_decay", 0.0), False)},
            weight_decay_mode=mode)
    raise TypeError(f"{name}: poptorch trains with SGD, Adam or AdamW "
                    "(poptorch.optim or torch.optim)")
