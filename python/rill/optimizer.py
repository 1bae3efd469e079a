"""Backward and optimizers, as in Fluid: `SGD(learning_rate=0.1).minimize(loss)`
appends the gradient ops and one update op per parameter to the program the
loss belongs to. Each is Rill's C++ optimizer (rill/optimizer.h), with
optional weight decay (`regularization=L2Decay(c)`) and global-norm clipping
(`grad_clip=GradientClipByGlobalNorm(n)`), and a learning-rate schedule
(`learning_rate_schedule=WarmupCosineDecay(warmup_steps, decay_steps)`).
With `placeable=True` the updates go into a placeable block, which
rill.distributed.DistributeTranspiler moves to parameter servers (in one
process the numbers are the same); regularization and clipping stay on the
trainers.
"""
from rill import _core


def append_backward(loss, no_grad_set=None):
    """Appends the gradient ops of everything `loss` (one float element)
    depends on to its program; returns [(parameter name, gradient name)]."""
    return _core.append_backward(loss.builder.main_program(), loss.name, set(no_grad_set or ()))


class L2Decay:
    """Weight decay: adds coeff * param to each gradient (`regularization=`)."""

    def __init__(self, regularization_coeff):
        self.regularization_coeff = regularization_coeff


class GradientClipByGlobalNorm:
    """Scales all gradients by clip_norm / max(clip_norm, their global L2 norm) (`grad_clip=`)."""

    def __init__(self, clip_norm):
        self.clip_norm = clip_norm


class WarmupCosineDecay:
    """A learning-rate schedule (`learning_rate_schedule=`): linear warm-up from 0
    to the optimizer's learning_rate over `warmup_steps`, then half a cosine down
    to min_ratio * learning_rate over `decay_steps`, flat after that. The steps
    are counted in a persistable variable ("lr_step_N") that checkpoints keep."""

    def __init__(self, warmup_steps, decay_steps, min_ratio=0.0):
        self.warmup_steps = warmup_steps
        self.decay_steps = decay_steps
        self.min_ratio = min_ratio


class _Optimizer:
    def __init__(self, optimizer, regularization=None, grad_clip=None,
                 learning_rate_schedule=None, placeable=False):
        self._optimizer = optimizer
        if placeable:
            optimizer.set_placeable(True)
        if learning_rate_schedule is not None:
            if not isinstance(learning_rate_schedule, WarmupCosineDecay):
                raise TypeError("learning_rate_schedule: Rill has WarmupCosineDecay only")
            s = learning_rate_schedule
            optimizer.set_warmup_cosine_decay(s.warmup_steps, s.decay_steps, s.min_ratio)
        if regularization is not None:
            if not isinstance(regularization, L2Decay):
                raise TypeError("regularization: Rill has L2Decay only")
            optimizer.set_l2(regularization.regularization_coeff)
        if grad_clip is not None:
            if not isinstance(grad_clip, GradientClipByGlobalNorm):
                raise TypeError("grad_clip: Rill has GradientClipByGlobalNorm only")
            optimizer.set_clip_global_norm(grad_clip.clip_norm)

    def minimize(self, loss):
        """Appends backward and the updates; returns [(parameter name, gradient name)]."""
        return self._optimizer.minimize(loss.builder, loss._var)

    @property
    def learning_rate_var(self):
        """The persistable [1] float32 learning-rate variable (after minimize)."""
        return self._optimizer.learning_rate_var


class SGD(_Optimizer):
    """param -= learning_rate * grad."""

    def __init__(self, learning_rate, regularization=None, grad_clip=None,
                 learning_rate_schedule=None, placeable=False):
        super().__init__(_core.SGD(learning_rate), regularization, grad_clip,
                         learning_rate_schedule, placeable)


class Momentum(_Optimizer):
    """velocity = momentum * velocity + grad; param -= learning_rate * velocity."""

    def __init__(self, learning_rate, momentum=0.9, use_nesterov=False, regularization=None,
                 grad_clip=None, learning_rate_schedule=None, placeable=False):
        super().__init__(_core.Momentum(learning_rate, momentum, use_nesterov), regularization,
                         grad_clip, learning_rate_schedule, placeable)


class Adam(_Optimizer):
    """Adam with bias correction, as PyTorch computes it."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 regularization=None, grad_clip=None, learning_rate_schedule=None,
                 placeable=False):
        super().__init__(_core.Adam(learning_rate, beta1, beta2, epsilon), regularization,
                         grad_clip, learning_rate_schedule, placeable)


class AdamW(_Optimizer):
    """Adam with decoupled weight decay, as torch.optim.AdamW: each step scales
    the parameter by 1 - learning_rate * weight_decay, then takes Adam's step
    (the decay does not enter the moments, unlike `regularization=L2Decay`).
    Dense gradients only."""

    def __init__(self, learning_rate=0.001, weight_decay=0.01, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, regularization=None, grad_clip=None,
                 learning_rate_schedule=None, placeable=False):
        super().__init__(_core.AdamW(learning_rate, weight_decay, beta1, beta2, epsilon),
                         regularization, grad_clip, learning_rate_schedule, placeable)


SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdamOptimizer = Adam
AdamWOptimizer = AdamW
