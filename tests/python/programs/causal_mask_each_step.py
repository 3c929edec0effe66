# A causal mask made afresh in every step, on one line: tril(ones(T, T)) depends on nothing
# the step brings, so it is the same tensor every time.
import torch
from torch import nn

torch.manual_seed(0)
T, D = 64, 32
proj = nn.Linear(D, D)
optimizer = torch.optim.SGD(proj.parameters(), lr=0.01)

for step in range(8):
    x = torch.randn(4, T, D)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))  # BUG: churn
    scores = proj(x) @ x.transpose(1, 2)
    loss = (scores * mask).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(loss.item())
