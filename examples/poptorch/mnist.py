#!/usr/bin/python3
"""The workshop's PopTorch MNIST program on Fashion-MNIST, on Tessera.

A small CNN whose training wrapper computes the loss inside forward,
trained with poptorch.trainingModel fed by poptorch.DataLoader (each call
runs --device-iterations steps on the IPU Model), then detached so that
poptorch.inferenceModel of the same network measures the test accuracy.

The images come from Debian's dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist, or TESSERA_FASHION_MNIST_DIR), laid
out as torchvision.datasets.FashionMNIST expects under --data-dir; nothing
is downloaded.

    PYTHONPATH=build/python /usr/bin/python3 examples/poptorch/mnist.py
"""
import argparse
import gzip
import os
import shutil
import time

import torch
import torch.nn as nn
import torchvision

import poptorch

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def local_root(data_dir):
    """data_dir with FashionMNIST/raw/ holding the uncompressed files
    torchvision reads, made from Debian's .gz files once."""
    source = os.environ.get("TESSERA_FASHION_MNIST_DIR", DEBIAN_DIR)
    raw = os.path.join(data_dir, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name in FILES:
        target = os.path.join(raw, name)
        if os.path.exists(target):
            continue
        gz = os.path.join(source, name + ".gz")
        if not os.path.exists(gz):
            raise SystemExit(f"{gz} is missing: install Debian's "
                             "dataset-fashion-mnist (scripts/deps.sh does) "
                             "or set TESSERA_FASHION_MNIST_DIR")
        with gzip.open(gz, "rb") as f, open(target + ".part", "wb") as out:
            shutil.copyfileobj(f, out)
        os.replace(target + ".part", target)
    return data_dir


class Block(nn.Module):
    def __init__(self, in_channels, channels, kernel):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, kernel)
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.pool(self.conv(x)))


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = Block(1, 16, 5)
        self.layer2 = Block(16, 32, 5)
        self.layer3 = nn.Linear(32 * 4 * 4, 128)
        self.layer3_act = nn.ReLU()
        self.layer4 = nn.Linear(128, 10)
        self.softmax = nn.LogSoftmax(1)

    def forward(self, x):
        x = self.layer2(self.layer1(x))
        x = self.layer3_act(self.layer3(torch.flatten(x, 1)))
        return self.softmax(self.layer4(x))


class TrainingModelWithLoss(nn.Module):
    """The loss is computed inside forward, as PopTorch requires."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = nn.NLLLoss()

    def forward(self, args, loss_inputs):
        output = self.model(args)
        return output, self.loss(output, loss_inputs)


def accuracy(predictions, labels):
    _, ind = torch.max(predictions, 1)
    labels = labels[-predictions.size()[0]:]
    return torch.sum(torch.eq(ind, labels)).item() / labels.size(0) * 100


def main():
    parser = argparse.ArgumentParser(
        description="Fashion-MNIST training in PopTorch (on Tessera)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--test-batch-size", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--lr-decay", type=float, default=0.1,
                        help="multiply the learning rate by this after "
                             "each epoch (default: 0.1)")
    parser.add_argument("--device-iterations", type=int, default=50)
    parser.add_argument("--data-dir", default=os.path.expanduser(
        "~/.cache/tessera/fashion_mnist_data"))
    parser.add_argument("--train-samples", type=int, default=0,
                        help="use only this many training images (0: all)")
    parser.add_argument("--test-samples", type=int, default=0,
                        help="use only this many test images (0: all)")
    args = parser.parse_args()
    torch.manual_seed(0)

    transform = torchvision.transforms.Compose([
        torchvision.transforms.ToTensor(),
        torchvision.transforms.Normalize((0.286,), (0.353,))])
    root = local_root(args.data_dir)
    train_set = torchvision.datasets.FashionMNIST(
        root, train=True, download=False, transform=transform)
    if args.train_samples:
        train_set = torch.utils.data.Subset(train_set,
                                            range(args.train_samples))
    test_set = torchvision.datasets.FashionMNIST(
        root, train=False, download=False, transform=transform)
    if args.test_samples:
        test_set = torch.utils.data.Subset(test_set, range(args.test_samples))

    opts = poptorch.Options().deviceIterations(args.device_iterations)
    training_data = poptorch.DataLoader(opts, train_set,
                                        batch_size=args.batch_size,
                                        shuffle=True, drop_last=True)
    test_data = poptorch.DataLoader(opts, test_set,
                                    batch_size=args.test_batch_size,
                                    shuffle=True, drop_last=True)

    model = Network()
    training_model = TrainingModelWithLoss(model)
    optimizer = poptorch.optim.SGD(model.parameters(), lr=args.lr,
                                    momentum=args.momentum)
    training_model = poptorch.trainingModel(training_model, opts,
                                            optimizer=optimizer)
    inference_model = poptorch.inferenceModel(model, opts)

    start = time.time()
    for epoch in range(args.epochs):
        if epoch:
            for group in optimizer.param_groups:
                group["lr"] *= args.lr_decay
            training_model.setOptimizer(optimizer)
        for data, labels in training_data:
            preds, losses = training_model(data, labels)
        print(f"epoch {epoch + 1}: loss {losses.mean().item():.4f} "
              f"({time.time() - start:.1f} s)")

    # Detach the training model so that the same IPU could be used for
    # validation.
    training_model.detachFromDevice()

    sum_acc = 0.0
    with torch.no_grad():
        for data, labels in test_data:
            output = inference_model(data)
            sum_acc += accuracy(output, labels)
    print("Accuracy on test set: {:.2f}%".format(sum_acc / len(test_data)))

    # The wrapped network holds the trained weights: plain PyTorch agrees.
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, labels in torch.utils.data.DataLoader(test_set, 1000):
            correct += (model(data).argmax(1) == labels).sum().item()
    print("Accuracy of the same network in PyTorch: {:.2f}%".format(
        100 * correct / len(test_set)))


if __name__ == "__main__":
    main()
