// A training loop whose helper keeps tensors in a function-local static cache, never
// cleared: the memory is held until process teardown, a leak for a training program.
// With --bounded the cache keeps only the current step's entry and is emptied before main
// returns: the clean twin.
//   static_cache [--bounded]
#include <cstring>
#include <map>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

namespace {

std::map<int, Tensor>& cache() {
  static std::map<int, Tensor> kept;  // made during main: destroyed before the recorder's statics
  return kept;
}

Tensor features(int step, bool bounded) {
  if (bounded) cache().erase(step - 1);
  auto it = cache().find(step);
  if (it == cache().end()) it = cache().emplace(step, randn({256, 64}, TensorOptions().device("cuda"))).first;  // the leak
  return it->second;
}

}  // namespace

int main(int argc, char** argv) {
  bool bounded = argc > 1 && std::strcmp(argv[1], "--bounded") == 0;
  Tensor w = randn({64, 8}, TensorOptions().device("cuda"));
  for (int step = 0; step < 6; ++step) {
    Tensor y = features(step, bounded).matmul(w);
    profiler::step();
  }
  if (bounded) cache().clear();
  return 0;  // the cache is destroyed after this, with the program's statics
}
