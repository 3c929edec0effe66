# The corrected twin of linear_regression.py: w has shape (1, 1), so `X @ w + b` is
# (100, 1) like y and the loss averages the 100 residuals.
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)

X = torch.rand(100, 1) * 10
y = 2 * X + 1 + torch.randn(100, 1)

w = torch.zeros(1, 1, requires_grad=True, device=device)
b = torch.zeros(1, requires_grad=True, device=device)

X, y = X.to(device), y.to(device)
for epoch in range(100):
    y_pred = X @ w + b  # (100, 1), the same shape as y
    loss = ((y_pred - y)**2).mean()

    loss.backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
        b -= 0.01 * b.grad
        w.grad.zero_()
        b.grad.zero_()

print(f"w = {w.item():.4f}, b = {b.item():.4f}, loss = {loss.item():.4f}")
