"""depthlab: the plumbing shared by the notebooks of the course on residual connections.

The concept each chapter teaches is written out in the notebook; what is here is the machinery
around it, and every name below is available as ``dl.<name>`` after ``import depthlab as dl``:

* ``models``: :class:`Block` and :class:`DeepMLP`, with switchable residuals, normalization
  and branch scale; ``transformer``: :class:`TinyTransformer` and its sequence tasks;
* ``probes``: what flows through a network (:class:`Probe`, Jacobians, gradient norms);
* ``training``: :func:`train` and its :class:`History`; ``sweep``: :func:`train_many`,
  :func:`train_together`, which trains many networks at once;
* ``data``: generated data sets; ``plots``: the figure style, colours and
  :func:`markdown_table`; ``twin``: interactive panels and their no-kernel twins;
* ``report`` and ``reproduce``: glued numbers, seeds, devices and checked conclusions;
  ``experiments``: a notebook's :func:`setup`, :func:`steps_to` and the learning-rate sweeps
  every lab compares its arms with (:func:`best_rates`, :func:`rate_table`);
* ``paths`` and ``memory`` (imported as modules): the path expansion of Chapter 3 and the
  activation-memory meter of Chapter 6.

Maintainer tooling (executing and timing notebooks) lives in ``tools/``, not here.
"""

from .benchmarks import load_mnist1d
from .data import spirals, split, two_spirals
from .experiments import best_rates, rate_table, setup, steps_to
from .models import ACTIVATIONS, ALPHA_WORDS, INITS, NORMS, Block, DeepMLP, init_linear
from .plots import COLORS, color, layer_heatmap, markdown_table, use_style
from .probes import (
    Probe,
    jacobian,
    jacobian_singular_values,
    position_similarity,
    weight_grad_norms,
)
from .report import geometric_mean, glue, significant
from .reproduce import ConclusionFailed, conclusions, default_device, lab_seed
from .resnet import BasicBlock, BottleneckBlock, ResNet1d, member_scores, train_resnet
from .sweep import train_many, train_together
from .training import History, accuracy, evaluate_loss, set_seed, train
from .transformer import (
    SeqHistory,
    TinyTransformer,
    TransformerBlock,
    sequence_accuracy,
    sequence_task,
    train_sequence,
)
from .twin import panel, scrubber

__all__ = [
    "accuracy", "ACTIVATIONS", "ALPHA_WORDS", "BasicBlock", "best_rates", "Block",
    "BottleneckBlock", "color",
    "COLORS", "ConclusionFailed",
    "conclusions", "DeepMLP", "default_device", "evaluate_loss", "geometric_mean",
    "glue", "History", "init_linear", "INITS", "jacobian", "jacobian_singular_values", "lab_seed",
    "layer_heatmap", "load_mnist1d", "markdown_table", "member_scores", "NORMS", "panel", "Probe",
    "position_similarity", "rate_table", "ResNet1d", "scrubber", "SeqHistory", "setup",
    "sequence_accuracy", "sequence_task", "set_seed", "significant", "spirals", "split",
    "steps_to",
    "TinyTransformer", "train", "train_many", "train_resnet", "train_sequence", "train_together",
    "TransformerBlock", "two_spirals", "use_style", "weight_grad_norms",
]

__version__ = "0.1.0"
