# Keeps every step's validation loss for a plot later, as a number.
import torch
from torch import nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    val_x, val_y = torch.randn(512, 64), torch.randn(512, 1)
    val_losses = []

    for step in range(10):
        x, target = torch.randn(128, 64), torch.randn(128, 1)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        val_loss = nn.functional.mse_loss(model(val_x), val_y)
        val_losses.append(val_loss.item())

    print("last validation loss", val_losses[-1])


if __name__ == "__main__":
    main()
