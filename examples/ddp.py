"""``mnist_style.py`` under DDP: ``torchrun --standalone --nproc_per_node 2 examples/ddp.py``.

Each rank's loader takes its rank and world size from the process group and
trains on its shard of each epoch's order; validation runs on every rank over
the whole held-out set (``eval_loader`` is unsharded unless asked), so each rank
reports the same accuracy. Gloo on CPU: no GPU needed.
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import optim
from torch.nn.parallel import DistributedDataParallel

import hotset
from hotset.data import make_digits
from mnist_style import Net, test


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--system", default="lru")
    parser.add_argument("--data", default=None, help="A digits directory (made if absent).")
    args = parser.parse_args(argv)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1)  # the same initial weights on every rank
    root = args.data or os.path.join(tempfile.gettempdir(), f"hotset-digits-{os.getuid()}")
    if rank == 0 and not os.path.exists(os.path.join(root, "manifest.csv")):
        make_digits(root, force=True)
    dist.barrier()  # rank 0 wrote the data set
    everything = hotset.open_dataset(root, decode="image")
    val_set = everything.subset(range(0, len(everything), 10))
    train_set = everything.subset([i for i in range(len(everything)) if i % 10])

    train_loader = hotset.loader(train_set, system=args.system, batch_size=args.batch_size, num_workers=args.workers)
    test_loader = hotset.eval_loader(val_set, batch_size=256)
    model = DistributedDataParallel(Net())
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        model.train()
        train_loader.set_epoch(epoch)
        for data, target, ids, w in train_loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target, reduction="none")
            train_loader.update(ids, loss.detach())
            (loss * w).mean().backward()
            optimizer.step()
        accuracy = test(model, test_loader)
        train_loader.record_validation(accuracy)
    print(f"rank {rank} of {dist.get_world_size()}: final accuracy {accuracy:.4f}")
    print(train_loader.summary())
    train_loader.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
