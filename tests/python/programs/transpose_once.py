# A tied output projection: the transposed table is made contiguous once, before the loop.
import torch

torch.manual_seed(0)
table = torch.randn(2048, 256)
projection = table.t().contiguous()
total = 0.0
for step in range(6):
    h = torch.randn(64, 256)
    total += (h @ projection).sum().item()
print(total)
