"""DistributedDataParallel over a model whose forward is a checkpointed
loop: with two gloo processes on CPU, the parameters' gradients after
backward equal plain DDP's (the same model with a plain Python loop),
bit for bit, on every rank, with a memory budget and with a schedule."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import adjoint_checkpoints as cp
from adjoint_checkpoints.torch import checkpointed_loop

STEPS, WIDTH = 24, 16


class Recurrent(torch.nn.Module):
    def __init__(self, how):
        super().__init__()
        torch.manual_seed(0)
        self.cell = torch.nn.Linear(WIDTH, WIDTH).double()
        self.how = how

    def forward(self, x):
        step = lambda i, h: torch.tanh(self.cell(h)) + 0.1 * h  # noqa: E731
        if self.how == "plain":
            for i in range(STEPS):
                x = step(i, x)
            return x
        if self.how == "memory":
            return checkpointed_loop(step, x, STEPS, memory=6 * x.numel() * 8 + 4096, params=list(self.parameters()))
        return checkpointed_loop(step, x, STEPS, schedule=lambda n: cp.Revolve(n, 3), params=list(self.parameters()))


def _worker(rank, world, port, how, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        model = torch.nn.parallel.DistributedDataParallel(Recurrent(how))
        torch.manual_seed(100 + rank)  # each rank its own batch
        x = torch.randn(4, WIDTH, dtype=torch.float64)
        model(x).square().sum().backward()
        out[(how, rank)] = [p.grad.clone() for p in model.parameters()]
    finally:
        dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _grads(how):
    # A spawned manager: forking a process that has imported JAX (other
    # tests do) may deadlock.
    with mp.get_context("spawn").Manager() as manager:
        out = manager.dict()
        mp.spawn(_worker, args=(2, _free_port(), how, out), nprocs=2, join=True)
        return dict(out)


@pytest.mark.parametrize("how", ["memory", "schedule"])
def test_ddp_gradients_are_plain_ddps(how):
    plain, ours = _grads("plain"), _grads(how)
    for rank in range(2):
        for g, r in zip(ours[(how, rank)], plain[("plain", rank)]):
            assert torch.equal(g, r), (how, rank, (g - r).abs().max())
    # All-reduced: both ranks hold the same gradients.
    assert all(torch.equal(a, b) for a, b in zip(ours[(how, 0)], ours[(how, 1)]))
