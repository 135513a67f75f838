"""depthlab: the plumbing shared by the notebooks of the course on residual connections.

The concept each chapter teaches is written out in the notebook; what is here is the machinery
around it, in three layers, and every name below is available as ``dl.<name>`` after
``import depthlab as dl``:

**The core** (``depthlab/*.py``): what a learner reads, in an hour. It imports nothing from
the two layers below.

* ``models``: :class:`Block` and :class:`DeepMLP`, with switchable residuals, normalization
  and branch scale (Chapters 1-6); ``resnet``: :class:`ResNet1d` and its blocks (Chapter 7);
  ``transformer``: :class:`TinyTransformer`, its sequence tasks and :func:`train_sequence`
  (Chapter 8);
* ``training``: :func:`train`, the reference loop, and its :class:`History`;
* ``probes``: what flows through a network (:class:`Probe`, Jacobians, gradient norms) and
  what every training step records;
* ``data``: generated data sets and the MNIST-1D loader; ``plots``: the figure style and
  colours; ``seeds``: seeds and devices (``DEPTHLAB_SEED``, ``DEPTHLAB_DEVICE``);
* ``_checks``: the argument checks, written once (each raises a ``ValueError`` that says
  what is allowed);
* ``shortcuts``, ``paths`` and ``memory`` (imported as modules, ``from depthlab import paths``):
  Chapter 2's plain, residual and Highway blocks, the path expansion of Chapter 3 and the
  activation-memory meter of Chapter 6, three chapters' own instruments kept beside the core
  (``tests/test_layers.py`` holds the core, without them, to 1,200 lines of code).

**The fast paths** (``depthlab/fast/``): :func:`train_many` and :func:`train_together`, which
train many networks at once and are tested to agree with :func:`train` model by model, and
:class:`ResNetStack` with :func:`member_scores`, several seeds' ResNets computed as one model
and tested against each network alone.

**The book's machinery** (``depthlab/book/``): :func:`glue`, :func:`significant`,
:func:`markdown_table`, :func:`show_source`, :func:`conclusions`, the interactive panels and
their no-kernel twins (:func:`panel`, :func:`scrubber`), and the labs' :func:`setup` and rate sweeps
(:func:`best_rates`, :func:`rate_table`).

Every public function and class names, in its docstring, the chapter or lab that introduces it.
Maintainer tooling (executing and timing notebooks) lives in ``tools/``, not here.
"""


# memory, paths and shortcuts are used as modules: ``from depthlab import paths``
from . import memory, paths, shortcuts  # noqa: F401
from .book import (
    ConclusionFailed,
    best_rates,
    check,
    conclusions,
    geometric_mean,
    glue,
    markdown_table,
    panel,
    rate_table,
    scrubber,
    setup,
    show_source,
    significant,
    steps_to,
)
from .data import load_mnist1d, spirals, split, two_spirals
from .fast import ResNetStack, member_scores, train_many, train_together
from .models import ACTIVATIONS, ALPHA_WORDS, INITS, NORMS, Block, DeepMLP, init_linear
from .plots import COLORS, color, layer_heatmap, use_style
from .probes import (
    Probe,
    accuracy_without,
    block_contributions,
    distance_from_rank_one,
    forward_through,
    input_share,
    jacobian,
    jacobian_singular_values,
    parameter_count,
    position_similarity,
    rms,
    weight_grad_norms,
)
from .resnet import BasicBlock, BottleneckBlock, ResNet1d, train_resnet
from .seeds import default_device, lab_seed, set_seed
from .training import History, accuracy, evaluate_loss, train
from .transformer import (
    SeqHistory,
    TinyTransformer,
    TransformerBlock,
    sequence_accuracy,
    sequence_task,
    train_sequence,
)

__all__ = [
    "accuracy", "accuracy_without", "ACTIVATIONS", "ALPHA_WORDS", "BasicBlock", "best_rates",
    "Block", "block_contributions", "BottleneckBlock", "check", "color", "COLORS",
    "ConclusionFailed", "conclusions", "DeepMLP", "default_device", "distance_from_rank_one",
    "evaluate_loss", "forward_through", "geometric_mean", "glue", "History", "init_linear",
    "INITS", "input_share", "jacobian", "jacobian_singular_values", "lab_seed",
    "layer_heatmap", "load_mnist1d", "markdown_table", "member_scores", "NORMS", "panel",
    "parameter_count", "position_similarity", "Probe", "rate_table", "ResNet1d", "ResNetStack",
    "rms", "scrubber", "SeqHistory", "sequence_accuracy", "sequence_task", "set_seed", "setup",
    "show_source", "significant", "spirals", "split", "steps_to", "TinyTransformer", "train",
    "train_many", "train_resnet", "train_sequence", "train_together", "TransformerBlock",
    "two_spirals", "use_style", "weight_grad_norms",
]

__version__ = "0.1.0"
