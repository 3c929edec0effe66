// Recording from the environment: MEMLENS_TRACE=path records the whole program
// (`memlens record` sets it), MEMLENS_STACKS=1 adds native stacks, MEMLENS_STACK_DEPTH sets
// their depth. A static object starts the recording; it stops when main returns.
#include <dlfcn.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "memlens/recorder/recorder.hpp"

namespace memlens::profiler {

namespace {

bool autostarted = false;  // MEMLENS_TRACE started this recording

struct Autostart {
  Autostart() {
    const char* path = std::getenv("MEMLENS_TRACE");
    if (!path || !*path) return;
    RecordOptions options;
    const char* stacks = std::getenv("MEMLENS_STACKS");
    options.stacks = stacks && std::string(stacks) == "1";
    if (const char* depth = std::getenv("MEMLENS_STACK_DEPTH")) options.stack_depth = std::atoi(depth);
    try {
      profiler::start(path, options);
      autostarted = true;
    } catch (const std::exception& e) {
      std::cerr << "memlens: cannot record: " << e.what() << "\n";
    }
  }
  ~Autostart() { profiler::stop(); }
} autostart;

// A training program's run ends when main returns. Static destruction comes after it, and
// statics made during main (a function-local cache of tensors) are destroyed before this
// file's own: were they recorded, memory held until teardown would look freed, and its
// leak missed. So a recording MEMLENS_TRACE started stops right as main returns.
using MainFunction = int (*)(int, char**, char**);
MainFunction user_main = nullptr;

// main is called as the C library calls it, with three arguments whatever its own
// declaration says: UBSan's function-type check would flag `int main(int, char**)`.
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
int main_then_stop(int argc, char** argv, char** envp) {
  int status = user_main(argc, argv, envp);
  if (autostarted) profiler::stop();
  return status;
}

}  // namespace
}  // namespace memlens::profiler

// The C runtime's entry to main, in the program the recorder is linked into: it calls the
// C library's own with main wrapped (glibc; _start binds to the executable's definition).
extern "C" int __libc_start_main(memlens::profiler::MainFunction main, int argc, char** argv, void (*init)(), void (*fini)(),
                                 void (*rtld_fini)(), void* stack_end) {
  using Real = int (*)(memlens::profiler::MainFunction, int, char**, void (*)(), void (*)(), void (*)(), void*);
  auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "__libc_start_main"));
  memlens::profiler::user_main = main;
  return real(memlens::profiler::main_then_stop, argc, argv, init, fini, rtld_fini, stack_end);
}

// Referenced by the link options of memlens::recorder so the autostart object is always linked.
extern "C" {
int memlens_recorder_autostart = 0;
}
