# One staging buffer, refilled with copy_ for every batch.
import torch
from torch import nn

torch.manual_seed(0)
source = torch.randn(1024, 128)
model = nn.Linear(128, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
staging = torch.empty(256, 128)

for step in range(12):
    start = (step % 4) * 256
    staging.copy_(source[start:start + 256])
    optimizer.zero_grad()
    loss = model(staging).pow(2).mean()
    loss.backward()
    optimizer.step()
print(loss.item())
