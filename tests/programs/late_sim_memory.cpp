// Sets MEMLENS_SIM_MEMORY inside main, then allocates on the simulated device: under
// `memlens record` the device was made before main, so the setting comes too late.
#include <cstdlib>
#include <memlens/runtime.hpp>

int main() {
  setenv("MEMLENS_SIM_MEMORY", "64MiB", 1);
  memlens::Tensor t = memlens::ones({1024}, memlens::Device("sim"));
  return t.numel() == 1024 ? 0 : 1;
}
