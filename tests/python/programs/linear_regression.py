# The seed article's section 7, written as the article wrote it, bug included: `X @ w`
# with X (100, 1) and w (1,) has shape (100,), and `y_pred - y` with y (100, 1) broadcasts
# to (100, 100), so the loss averages 10,000 pairs instead of 100 residuals. The C++ port
# is samples/linear_regression.cpp; linear_regression_fixed.py is the corrected twin.
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)

# Data
X = torch.rand(100, 1) * 10
y = 2 * X + 1 + torch.randn(100, 1)

# Model parameters, explicitly on the accelerator
w = torch.zeros(1, requires_grad=True, device=device)
b = torch.zeros(1, requires_grad=True, device=device)

# Training loop
X, y = X.to(device), y.to(device)
for epoch in range(100):
    y_pred = X @ w + b
    loss = ((y_pred - y)**2).mean()  # BUG: broadcast

    loss.backward()
    with torch.no_grad():  # in-place updates outside autograd
        w -= 0.01 * w.grad
        b -= 0.01 * b.grad
        w.grad.zero_()
        b.grad.zero_()

print(f"w = {w.item():.4f}, b = {b.item():.4f}, loss = {loss.item():.4f}")
