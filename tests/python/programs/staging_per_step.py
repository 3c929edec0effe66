# A staging buffer allocated afresh for every batch and filled with copy_: the allocator
# hands out the same size again and again.
import torch
from torch import nn

torch.manual_seed(0)
source = torch.randn(1024, 128)
model = nn.Linear(128, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(12):
    staging = torch.empty(256, 128)  # BUG: churn
    start = (step % 4) * 256
    staging.copy_(source[start:start + 256])
    optimizer.zero_grad()
    loss = model(staging).pow(2).mean()
    loss.backward()
    optimizer.step()
print(loss.item())
