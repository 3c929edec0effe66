#pragma once
// A test-and-test-and-set lock for the allocator's short critical sections: an
// uncontended lock/unlock pair is two atomic operations, where a pthread mutex also
// keeps owner and user counts. Waiters spin briefly, then yield.
#include <atomic>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace memlens {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (spins < 64) {
#if defined(__x86_64__)
          _mm_pause();
#endif
          ++spins;
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace memlens
