#pragma once
// Native stacks for allocation and OOM events, walked through frame pointers.
#include <cstdint>

namespace memlens::profiler {

// The deepest stack an event may carry (MEMLENS_STACK_DEPTH is clamped to it).
inline constexpr int kMaxFrames = 32;

// Writes up to `max` return addresses of the calling thread, innermost first; returns how
// many. memlens builds with -fno-omit-frame-pointer: tens of nanoseconds where an unwinder
// takes microseconds. A frame without a frame pointer ends the walk early; nothing outside
// the thread's stack is read.
int frame_pointer_backtrace(std::uint64_t* out, int max);

}  // namespace memlens::profiler
