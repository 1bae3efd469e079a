"""Backward and optimizers, as in Fluid: `SGD(learning_rate=0.1).minimize(loss)`
appends the gradient ops and one update op per parameter to the program the
loss belongs to. Each is Rill's C++ optimizer (rill/optimizer.h).
"""
from rill import _core


def append_backward(loss, no_grad_set=None):
    """Appends the gradient ops of everything `loss` (one float element)
    depends on to its program; returns [(parameter name, gradient name)]."""
    return _core.append_backward(loss.builder.main_program(), loss.name, set(no_grad_set or ()))


class _Optimizer:
    def __init__(self, optimizer):
        self._optimizer = optimizer

    def minimize(self, loss):
        """Appends backward and the updates; returns [(parameter name, gradient name)]."""
        return self._optimizer.minimize(loss.builder, loss._var)

    @property
    def learning_rate_var(self):
        """The persistable [1] float32 learning-rate variable (after minimize)."""
        return self._optimizer.learning_rate_var


class SGD(_Optimizer):
    """param -= learning_rate * grad."""

    def __init__(self, learning_rate):
        super().__init__(_core.SGD(learning_rate))


class Momentum(_Optimizer):
    """velocity = momentum * velocity + grad; param -= learning_rate * velocity."""

    def __init__(self, learning_rate, momentum=0.9, use_nesterov=False):
        super().__init__(_core.Momentum(learning_rate, momentum, use_nesterov))


class Adam(_Optimizer):
    """Adam with bias correction, as PyTorch computes it."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8):
        super().__init__(_core.Adam(learning_rate, beta1, beta2, epsilon))


SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdamOptimizer = Adam
