#include "stack_walk.hpp"

#include <pthread.h>

namespace memlens::profiler {

namespace {

struct StackBounds {
  std::uintptr_t lo = 0, hi = 0;
};

StackBounds thread_stack_bounds() {
  StackBounds b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      b.lo = reinterpret_cast<std::uintptr_t>(addr);
      b.hi = b.lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  return b;
}

}  // namespace

int frame_pointer_backtrace(std::uint64_t* out, int max) {
  static thread_local StackBounds bounds = thread_stack_bounds();
  auto* fp = static_cast<std::uintptr_t*>(__builtin_frame_address(0));
  int n = 0;
  while (n < max) {
    auto at = reinterpret_cast<std::uintptr_t>(fp);
    if (at < bounds.lo || at + 2 * sizeof(void*) > bounds.hi || (at & (sizeof(void*) - 1))) break;
    std::uint64_t ret = fp[1];
    if (!ret) break;
    out[n++] = ret;
    auto* next = reinterpret_cast<std::uintptr_t*>(fp[0]);
    if (next <= fp) break;  // the chain must go up the stack
    fp = next;
  }
  return n;
}

}  // namespace memlens::profiler
