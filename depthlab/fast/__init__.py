"""The fast paths: many networks trained at once, each tested against the core.

What a learner reads is :func:`depthlab.train` and :class:`depthlab.ResNet1d`; the labs compare
dozens of small networks, and training them one after the other is dominated by Python
overhead.

* :mod:`depthlab.fast.sweep` stacks ``K`` models of one architecture into one parameter tensor
  and runs them with ``torch.vmap`` (:func:`train_many`, :func:`train_together`), with the same
  loop (``depthlab.training._fit``), the same data order and the same per-step record as
  :func:`depthlab.train`, and ``torch.optim``'s Adam and SGD written out for per-model learning
  rates. ``tests/test_sweep.py`` checks each model against :func:`depthlab.train` (MLPs and
  transformers), ``tests/test_layers.py`` the optimizer arithmetic against ``torch.optim``.
* :mod:`depthlab.fast.resnet` lays ``K`` seeds' ResNets side by side in grouped convolutions
  (:class:`ResNetStack`, :func:`member_scores`); ``tests/test_resnet.py`` checks each network
  of a stack against the same network trained alone.

Nothing in the core imports this package.
"""

from .resnet import ResNetStack, member_scores
from .sweep import architecture_key, train_many, train_together

__all__ = ["architecture_key", "member_scores", "ResNetStack", "train_many", "train_together"]
