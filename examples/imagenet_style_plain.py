"""The shape of pytorch/examples' imagenet/main.py, small enough for a CPU: plain DataLoader.

The baseline that ``imagenet_style.py`` ports to hotset; ``diff -u`` the two files
to see every line the port changes. DATA holds ``train/CLASS/*.JPEG`` and
``val/CLASS/*.JPEG`` (ImageNet's layout). Run:
``python examples/imagenet_style_plain.py DATA``, or DDP on two processes (gloo, CPU):
``torchrun --standalone --nproc_per_node 2 examples/imagenet_style_plain.py DATA --distributed``.
torchvision's datasets and transforms are used when installed, else ``mini_vision.py``'s;
a small convnet stands in for ResNet-18.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

try:
    from torchvision import datasets, transforms
except ImportError:  # the few parts used here (mini_vision.py)
    import mini_vision as datasets
    import mini_vision as transforms


class Net(nn.Module):
    """Three conv blocks and global average pooling: any image size, RGB in."""

    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class AverageMeter:
    def __init__(self, name, fmt=":.4f"):
        self.name, self.fmt = name, fmt
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        return ("{name} {avg" + self.fmt + "}").format(name=self.name, avg=self.avg)


def accuracy(output, target):
    """Top-1 accuracy of a batch, in percent."""
    with torch.no_grad():
        return (output.argmax(dim=1) == target).float().mean().item() * 100.0


def checkpoint_path(directory, rank, distributed):
    """One file per rank under DDP (each rank resumes from its own)."""
    return os.path.join(directory, f"checkpoint.rank{rank}.pt" if distributed else "checkpoint.pt")


def train(train_loader, model, criterion, optimizer, epoch, args):
    batch_time, losses, top1 = AverageMeter("Time", ":.3f"), AverageMeter("Loss"), AverageMeter("Acc@1", ":.2f")
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        output = model(images)
        loss = criterion(output, target)
        losses.update(loss.item(), images.size(0))
        top1.update(accuracy(output, target), images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)
        end = time.time()
        if i % args.print_freq == 0:
            print(f"Epoch: [{epoch}][{i}/{len(train_loader)}] {batch_time} {losses} {top1}")


def validate(val_loader, model, args):
    top1 = AverageMeter("Acc@1", ":.2f")
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            top1.update(accuracy(model(images), target), images.size(0))
    print(f" * {top1}")
    return top1.avg


def main(argv=None):
    parser = argparse.ArgumentParser(description="ImageFolder training in the shape of imagenet/main.py")
    parser.add_argument("data", help="a folder with train/ and val/, one sub-folder per class in each")
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--start-epoch", type=int, default=0)
    parser.add_argument("-b", "--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--wd", "--weight-decay", type=float, default=1e-4, dest="weight_decay")
    parser.add_argument("-p", "--print-freq", type=int, default=10)
    parser.add_argument("--checkpoint-dir", default=".", help="where each epoch's checkpoint is written")
    parser.add_argument("--resume", default="", help="a --checkpoint-dir to resume from")
    parser.add_argument("-e", "--evaluate", action="store_true", help="validate only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--distributed", action="store_true", help="DDP under torchrun (gloo, CPU)")
    args = parser.parse_args(argv)

    if args.distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if args.distributed else 0
    torch.manual_seed(args.seed)  # the same initial weights on every rank

    traindir, valdir = os.path.join(args.data, "train"), os.path.join(args.data, "val")
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(traindir, transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor(), normalize]))
    val_dataset = datasets.ImageFolder(valdir, transforms.Compose([transforms.ToTensor(), normalize]))
    train_sampler = DistributedSampler(train_dataset, seed=args.seed) if args.distributed else None
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None), num_workers=args.workers, sampler=train_sampler)
    val_loader = DataLoader(val_dataset, batch_size=args.batch_size, shuffle=False, num_workers=args.workers)
    num_classes = len(train_dataset.classes)

    model = Net(num_classes)
    if args.distributed:
        model = DistributedDataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    scheduler = StepLR(optimizer, step_size=30, gamma=0.1)
    best_acc1 = 0.0
    if args.resume:
        checkpoint = torch.load(checkpoint_path(args.resume, rank, args.distributed))  # weights_only
        args.start_epoch, best_acc1 = checkpoint["epoch"], checkpoint["best_acc1"]
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        print(f"=> resumed from epoch {args.start_epoch}")
    if args.evaluate:
        validate(val_loader, model, args)
        return

    for epoch in range(args.start_epoch, args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        train(train_loader, model, criterion, optimizer, epoch, args)
        acc1 = validate(val_loader, model, args)
        scheduler.step()
        best_acc1 = max(acc1, best_acc1)
        state = {"epoch": epoch + 1, "best_acc1": best_acc1, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
        torch.save(state, checkpoint_path(args.checkpoint_dir, rank, args.distributed))
    print(f"rank {rank}: best Acc@1 {best_acc1:.2f}")
    if args.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
