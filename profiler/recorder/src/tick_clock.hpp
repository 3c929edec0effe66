#pragma once
// Time on the recording hot path: the CPU's time-stamp counter where there is one (a few
// ns less than clock_gettime, and no call), converted on the writer thread into the
// trace's steady_clock nanoseconds by a ratio calibrated when recording starts.
#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace memlens::profiler {

inline std::uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

inline std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

class TickClock {
 public:
  // Measures ticks against steady_clock in two readings: start() takes the first,
  // finish() the second and sets the ratio (the longer between them, the more exact).
  // The recorder starts it and the writer thread finishes it kSpan later, or sooner when
  // the recording stops first, so the program never waits for it.
  static constexpr std::chrono::milliseconds kSpan{5};
  void start() {
    tick0_ = ticks();
    ns0_ = steady_ns();
  }
  std::chrono::steady_clock::time_point started() const {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns0_));
  }
  void finish() {
    std::uint64_t t1 = ticks(), n1 = steady_ns();
    ns_per_tick_ = t1 > tick0_ ? static_cast<double>(n1 - ns0_) / static_cast<double>(t1 - tick0_) : 1.0;
  }
  std::uint64_t to_ns(std::uint64_t t) const {
    if (t < tick0_) return ns0_;
    return ns0_ + static_cast<std::uint64_t>(static_cast<double>(t - tick0_) * ns_per_tick_);
  }
  std::uint64_t duration_ns(std::uint64_t ticks) const {
    return static_cast<std::uint64_t>(static_cast<double>(ticks) * ns_per_tick_);
  }

 private:
  std::uint64_t tick0_ = 0, ns0_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace memlens::profiler
