"""Finding the largest batch that fits by trying, starting from one that fits."""
import torch

model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train_step(batch):
    x = torch.randn(batch, 64)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


for batch in (1 << 12, 256):
    try:
        train_step(batch)
        print("batch", batch, "fits")
        break
    except RuntimeError as e:
        print("batch", batch, "does not fit:", str(e).splitlines()[0][:60])
