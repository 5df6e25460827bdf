"""The classic PyTorch training script shape, on scikit-learn's digits: plain DataLoader.

The baseline that ``mnist_style.py`` ports to hotset; ``diff -u`` the two files
to see every line the port changes. Run: ``python examples/mnist_style_plain.py``.
"""

import argparse
import tempfile

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader

import hotset
from hotset.data import make_digits


class Net(nn.Module):
    """A small convnet for 8x8 grayscale digits."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def train(args, model, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"epoch {epoch} batch {batch_idx} loss {loss.item():.4f}")


def test(model, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            correct += (model(data).argmax(dim=1) == target).sum().item()
    accuracy = correct / len(test_loader.dataset)
    print(f"test accuracy {accuracy:.4f}")
    return accuracy


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--system", default="shade")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    root = tempfile.mkdtemp(prefix="digits-")
    make_digits(root)
    everything = hotset.open_dataset(root, decode="image")
    val_ids = list(range(0, len(everything), 10))  # every 10th sample held out
    train_ids = [i for i in range(len(everything)) if i % 10]
    train_set, val_set = everything.subset(train_ids), everything.subset(val_ids)

    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    test_loader = DataLoader(val_set, batch_size=256)
    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        train(args, model, train_loader, optimizer, epoch)
        accuracy = test(model, test_loader)
    return accuracy


if __name__ == "__main__":
    main()
