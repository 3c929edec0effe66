# A tied output projection that transposes the embedding table and makes it contiguous
# in every step: a full copy of the table each time.
import torch

torch.manual_seed(0)
table = torch.randn(2048, 256)
total = 0.0
for step in range(6):
    h = torch.randn(64, 256)
    projection = table.t().contiguous()  # BUG: layout_copy
    total += (h @ projection).sum().item()
print(total)
