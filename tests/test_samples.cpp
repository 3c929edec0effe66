// End-to-end: the real sample binaries, run as a user would run them.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memlens/runtime.hpp>
#include <sstream>
#include <string>

using namespace memlens;

namespace {

struct Run {
  int exit_code;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Run run(const std::string& command) {
  std::string base = "/tmp/memlens-sample-test-" + std::to_string(::getpid());
  int status = std::system((command + " >" + base + ".out 2>" + base + ".err").c_str());
  Run r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base + ".out"), slurp(base + ".err")};
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

double field(const std::string& text, const std::string& name) {
  auto at = text.find(name + " = ");
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + name.size() + 3));
}

}  // namespace

TEST_CASE("linear_regression runs as the article wrote it - broadcasting bug included") {
  Run r = run(LINEAR_REGRESSION_BIN);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("linear_regression: 100 epochs on sim:0") != std::string::npos);
  CHECK(r.out.find("y_pred - y has shape [100, 100]") != std::string::npos);
  CHECK(r.out.find("memlens memory summary, device sim:0") != std::string::npos);
  CHECK(r.err.find("memlens: cuda is served by the simulated device sim:0") != std::string::npos);
  // The pairwise loss cannot fit the data: it stays far above the noise level.
  CHECK(field(r.out, "loss") > 10.0);
}

TEST_CASE("linear_regression_fixed fits w = 2 - b = 1 (the least-squares solution)") {
  Run r = run(LINEAR_REGRESSION_FIXED_BIN);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  double w = field(r.out, "w"), b = field(r.out, "b");
  // The same data as the sample: same seed, same calls.
  manual_seed(0);
  Tensor X = (rand({100, 1}) * 10).to(kFloat64);
  Tensor y = 2 * X + 1 + randn({100, 1}).to(kFloat64);
  double mx = X.mean().item<double>(), my = y.mean().item<double>();
  double w_ols = ((X - mx) * (y - my)).sum().item<double>() / (X - mx).pow(2).sum().item<double>();
  double b_ols = my - w_ols * mx;
  CHECK(std::abs(w - w_ols) < 0.01);
  CHECK(std::abs(b - b_ols) < 0.02);
  CHECK(std::abs(w - 2) < 0.1);
  CHECK(std::abs(b - 1) < 0.5);
  CHECK(field(r.out, "loss") < 1.5);  // the noise variance is 1
}

TEST_CASE("a forced MEMLENS_DEVICE=cuda without a GPU is a clear error") {
  Run r = run(std::string("MEMLENS_DEVICE=cuda ") + LINEAR_REGRESSION_BIN);
  if (cuda_unavailable_reason().empty()) {  // a GPU: the sample runs on it
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("100 epochs on cuda:0") != std::string::npos);
  } else {
    CHECK(r.exit_code == 1);
    CHECK(r.err == "linear_regression: error: MEMLENS_DEVICE=cuda but CUDA is not usable: " + cuda_unavailable_reason() + "\n");
  }
  Run bad = run(std::string("MEMLENS_DEVICE=tpu ") + LINEAR_REGRESSION_BIN);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err == "linear_regression: error: MEMLENS_DEVICE: unknown device 'tpu' (expected auto, cpu, sim or cuda)\n");
  Run cpu = run(std::string("MEMLENS_DEVICE=cpu ") + LINEAR_REGRESSION_BIN);
  CHECK(cpu.exit_code == 0);
  CHECK(cpu.out.find("100 epochs on cpu") != std::string::npos);
  Run tiny = run(std::string("MEMLENS_SIM_MEMORY=banana ") + LINEAR_REGRESSION_BIN);
  CHECK(tiny.exit_code == 1);
  CHECK(tiny.err.find("MEMLENS_SIM_MEMORY: invalid byte size 'banana'") != std::string::npos);
}
