"""Unit tests of depthlab.memory: the saved-tensor meter must count what autograd really keeps."""

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from depthlab import memory


def test_linear_relu_saves_its_input_and_its_output_but_not_the_weight():
    torch.manual_seed(0)
    layer = nn.Linear(16, 32)
    x = torch.randn(8, 16, requires_grad=True)
    with memory.SavedTensorMeter(exclude=layer.parameters()) as meter:
        y = torch.relu(layer(x))
    # addmm keeps x (for dL/dW); relu keeps its output (for its own backward)
    assert meter.bytes == x.nbytes + y.nbytes
    assert meter.count == 2


def test_without_exclude_the_parameters_are_counted_too():
    torch.manual_seed(0)
    layer = nn.Linear(16, 32)
    x = torch.randn(8, 16, requires_grad=True)
    with memory.SavedTensorMeter() as meter:
        layer(x)
    assert meter.bytes == x.nbytes + layer.weight.nbytes


def test_a_tensor_saved_twice_is_counted_once():
    x = torch.randn(100, requires_grad=True)
    with memory.SavedTensorMeter() as meter:
        x * x  # mul saves both operands: the same storage twice
    assert meter.count == 1
    assert meter.bytes == x.nbytes


def test_nothing_is_saved_under_no_grad():
    layer = nn.Linear(8, 8)
    with torch.no_grad():
        _, n = memory.saved_bytes(layer, torch.randn(4, 8))
    assert n == 0


def test_checkpointing_keeps_only_the_segment_inputs_and_the_same_gradients():
    torch.manual_seed(0)
    blocks = nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.Tanh()) for _ in range(6)])
    x = torch.randn(16, 32, requires_grad=True)

    def full(x):
        return blocks(x)

    def ckpt(x):  # two segments of three blocks
        h = checkpoint(blocks[:3], x, use_reentrant=False)
        return checkpoint(blocks[3:], h, use_reentrant=False)

    grads = []
    for fn, expect in [(full, None), (ckpt, 2 * x.nbytes)]:
        out, n = memory.saved_bytes(fn, x, exclude=blocks.parameters())
        if expect is None:
            # x, and each tanh output (which is also the next Linear's saved input)
            assert n == 7 * x.nbytes
        else:
            assert n == expect  # the two segment inputs, nothing else
        blocks.zero_grad()
        x.grad = None
        out.square().sum().backward()
        grads.append([x.grad.clone()] + [p.grad.clone() for p in blocks.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*grads))


def test_format_bytes_uses_binary_units():
    assert memory.format_bytes(512) == "512 B"
    assert memory.format_bytes(1536) == "1.5 KiB"
    assert memory.format_bytes(3 * 1024 ** 2) == "3.0 MiB"


@pytest.mark.parametrize("bad, message", [
    (lambda: memory.SavedTensorMeter(exclude=[1.0]), "exclude must be an iterable of tensors"),
    (lambda: memory.saved_bytes("not a function"), "fn must be callable, got str"),
    (lambda: memory.format_bytes(-1), "n must be a number of bytes >= 0"),
    (lambda: memory.format_bytes("10"), "n must be a number of bytes >= 0"),
])
def test_bad_arguments_raise_value_error_saying_what_is_allowed(bad, message):
    with pytest.raises(ValueError, match=message):
        bad()
