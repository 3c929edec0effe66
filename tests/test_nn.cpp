// nn modules, losses and optimisers.
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

TEST_CASE("Linear has PyTorch's shapes and init bounds") {
  manual_seed(0);
  nn::Linear fc(4, 3);
  CHECK(fc.weight.sizes() == Shape{3, 4});
  CHECK(fc.bias.sizes() == Shape{3});
  CHECK(fc.weight.requires_grad());
  CHECK(fc.weight.abs().max().item<double>() <= 0.5);  // 1/sqrt(4)
  CHECK(fc(ones({5, 4})).sizes() == Shape{5, 3});
  CHECK(allclose(fc(ones({1, 4})), ones({1, 4}).mm(fc.weight.t()) + fc.bias));
  CHECK(fc.parameters().size() == 2);
  nn::Linear nobias(4, 3, false);
  CHECK(nobias.parameters().size() == 1);
}

TEST_CASE("Sequential lists parameters of its children by name") {
  nn::Sequential net{std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(8, 1)};
  auto named = net.named_parameters();
  REQUIRE(named.size() == 4);
  CHECK(named[0].first == "0.weight");
  CHECK(named[3].first == "2.bias");
  CHECK(net(ones({3, 2})).sizes() == Shape{3, 1});
  net(ones({3, 2})).sum().backward();
  CHECK(named[0].second.grad().defined());
  net.zero_grad();
  CHECK_FALSE(named[0].second.grad().defined());
}

TEST_CASE("losses compute known values") {
  nn::MSELoss mse;
  CHECK(mse(tensor({1, 2, 3}), tensor({1, 2, 5})).item<double>() == Approx(4.0 / 3));
  CHECK_THROWS_AS(mse(ones({100}), ones({100, 1})), ShapeError);
  nn::CrossEntropyLoss ce;
  Tensor logits = tensor({2, 0, 0, 0, 3, 0}, {2, 3});
  Tensor target = tensor({0, 1}, kInt64);
  double l0 = -std::log(std::exp(2.0) / (std::exp(2.0) + 2));
  double l1 = -std::log(std::exp(3.0) / (std::exp(3.0) + 2));
  CHECK(ce(logits, target).item<double>() == Approx((l0 + l1) / 2).epsilon(1e-6));
  CHECK_THROWS_AS(ce(logits, tensor({0, 1})), TypeError);
  CHECK_THROWS_WITH(ce(logits, tensor({0, 3}, kInt64)), "CrossEntropyLoss: Target 3 is out of bounds (3 classes).");
}

TEST_CASE("CrossEntropyLoss's gradient is (softmax - one-hot) / N") {
  Tensor logits = tensor({2, 0, 0, 0, 3, 0}, {2, 3}).requires_grad_(true);
  nn::CrossEntropyLoss ce;
  ce(logits, tensor({0, 1}, kInt64)).backward();
  Tensor g = logits.grad().contiguous();
  const double e2 = std::exp(2.0), e3 = std::exp(3.0);
  const double expected[6] = {(e2 / (e2 + 2) - 1) / 2, 1 / (e2 + 2) / 2,        1 / (e2 + 2) / 2,
                              1 / (e3 + 2) / 2,        (e3 / (e3 + 2) - 1) / 2, 1 / (e3 + 2) / 2};
  for (int i = 0; i < 6; ++i) CHECK(g.reshape({-1})[i].item<double>() == Approx(expected[i]).epsilon(1e-6));
}

TEST_CASE("SGD with momentum follows the update rule") {
  Tensor p = tensor({1.0}, requires_grad());
  optim::SGD sgd({p}, optim::SGDOptions{0.1, 0.9});
  for (int i = 0; i < 2; ++i) {
    sgd.zero_grad();
    (p * 2).sum().backward();  // gradient 2
    sgd.step();
  }
  // v1 = 2, p = 1 - 0.2 = 0.8; v2 = 0.9*2 + 2 = 3.8, p = 0.8 - 0.38 = 0.42
  CHECK(p.item<double>() == Approx(0.42));
}

TEST_CASE("Adam and an MLP learn a separable problem") {
  manual_seed(3);
  Tensor x = randn({200, 2});
  Tensor y = (x.select(1, 0) + x.select(1, 1) > 0).to(kInt64);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(2, 16), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 2)});
  optim::Adam adam(net->parameters(), optim::AdamOptions{0.05});
  nn::CrossEntropyLoss ce;
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    adam.zero_grad();
    Tensor loss = ce((*net)(x), y);
    loss.backward();
    adam.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  CHECK(last < first / 4);
  Tensor accuracy = (*net)(x).argmax(1).eq(y).to(kFloat32).mean();
  CHECK(accuracy.item<double>() > 0.95);
}

TEST_CASE("Module::to moves parameters and keeps handles valid") {
  nn::Linear fc(3, 2);
  fc.to(Device("sim"));
  CHECK(fc.weight.device() == Device("sim"));
  CHECK(fc.parameters()[0].device() == Device("sim"));
  CHECK(fc(ones({1, 3}, Device("sim"))).device() == Device("sim"));
}
