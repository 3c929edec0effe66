#pragma once
// One recording thread's ring: a single-producer, single-consumer queue of 64-bit words
// holding variable-length records. A small event costs a few words, not a whole Event,
// and the producer touches the consumer's cache line only when its cached view of the
// tail says the ring may be filling up.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>

#include "cache_eviction.hpp"

namespace memlens::profiler {

// The first word of every record. Kind 0 pads the end of the ring: records never wrap,
// so the writer decodes each one in place.
struct RecordHeader {
  std::uint8_t kind = 0, device = 0, sub = 0, flags = 0;
  std::uint16_t words = 0;  // the record's length, header included
  std::uint16_t extra = 0;  // a small per-kind count (dims, inputs, stack depth)

  std::uint64_t pack() const {
    return std::uint64_t{kind} | std::uint64_t{device} << 8 | std::uint64_t{sub} << 16 | std::uint64_t{flags} << 24 |
           std::uint64_t{words} << 32 | std::uint64_t{extra} << 48;
  }
  static RecordHeader unpack(std::uint64_t w) {
    return {static_cast<std::uint8_t>(w),       static_cast<std::uint8_t>(w >> 8),   static_cast<std::uint8_t>(w >> 16),
            static_cast<std::uint8_t>(w >> 24), static_cast<std::uint16_t>(w >> 32), static_cast<std::uint16_t>(w >> 48)};
  }
};

class ThreadRing {
 public:
  static constexpr std::size_t kWords = std::size_t{1} << 17;  // 1 MiB
  static constexpr std::size_t kMaxRecordWords = 64;
  // Past this many unread words the producer wakes the writer (once, until it catches up).
  static constexpr std::size_t kWakeWords = kWords / 4;

  explicit ThreadRing(std::uint32_t number)
      : number_(number), words_(new (std::align_val_t{kCacheLineBytes}) std::uint64_t[kWords]) {}
  std::uint32_t number() const { return number_; }

  // ---- producer (the owning thread)

  // Room for `n` (≤ kMaxRecordWords) contiguous words; waits for the writer when full
  // rather than lose an event. Publish them with publish(n).
  template <class Wake>
  std::uint64_t* reserve(std::size_t n, Wake&& wake) {
    std::uint64_t h = head_.load(std::memory_order_relaxed);
    std::size_t pos = h & (kWords - 1);
    std::size_t pad = pos + n > kWords ? kWords - pos : 0;
    if (h + pad + n - cached_tail_ > kWords) [[unlikely]]
      wait_for_room(h + pad + n, wake);
    if (pad) {
      words_[pos] = RecordHeader{0, 0, 0, 0, static_cast<std::uint16_t>(pad), 0}.pack();
      head_.store(h + pad, std::memory_order_release);
      pos = 0;
    }
    return &words_[pos];
  }

  template <class Wake>
  void publish(std::size_t n, Wake&& wake) {
    std::uint64_t h = head_.load(std::memory_order_relaxed) + n;
    head_.store(h, std::memory_order_release);
    if (h - cached_tail_ > kWakeWords) [[unlikely]] {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h - cached_tail_ > kWakeWords) wake();
    }
  }

  // How often this thread found its ring full and waited for the writer.
  std::uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }

  // The owning thread has ended: once drained, the writer may free the ring.
  void retire() { retired_.store(true, std::memory_order_release); }
  bool retired() const { return retired_.load(std::memory_order_acquire); }

  // ---- consumer (the writer thread)

  // Where the producer has published up to (consumer side): a limit for drain().
  std::uint64_t published() const { return head_.load(std::memory_order_acquire); }

  // Calls visit(words, header) for the published records in order (those before `limit`),
  // while it returns true (the record is taken); the first it declines stays, to be
  // offered again. Returns how many were taken.
  // The lines wholly taken are then evicted from the caches (cache_eviction.hpp).
  template <class Visit>
  std::size_t drain(Visit&& visit, std::uint64_t limit = ~std::uint64_t{0}) {
    std::uint64_t head = std::min(head_.load(std::memory_order_acquire), limit);
    std::uint64_t t = tail_.load(std::memory_order_relaxed);
    const std::uint64_t first_line = t / kLineWords;
    std::size_t records = 0;
    while (t < head) {
      const std::uint64_t* w = &words_[t & (kWords - 1)];
      RecordHeader h = RecordHeader::unpack(*w);
      if (h.kind != 0) {
        if (!visit(w, h)) break;
        // Give a producer that waits for room some back before the whole batch is done.
        if ((++records & 255) == 0) tail_.store(t + h.words, std::memory_order_release);
      }
      t += h.words;
    }
    tail_.store(t, std::memory_order_release);
    for (std::uint64_t line = first_line; line < t / kLineWords; ++line) evict_line(&words_[line * kLineWords & (kWords - 1)]);
    return records;
  }

  // Calls visit(words, header) for every published record not yet taken, taking none.
  template <class Visit>
  void peek(Visit&& visit) const {
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    for (std::uint64_t t = tail_.load(std::memory_order_relaxed); t < head;) {
      const std::uint64_t* w = &words_[t & (kWords - 1)];
      RecordHeader h = RecordHeader::unpack(*w);
      if (h.kind != 0) visit(w, h);
      t += h.words;
    }
  }

  // Every published record taken (consumer side).
  bool drained() const { return tail_.load(std::memory_order_relaxed) == head_.load(std::memory_order_acquire); }

 private:
  template <class Wake>
  void wait_for_room(std::uint64_t end, Wake& wake) {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (end - cached_tail_ <= kWords) return;
    waits_.fetch_add(1, std::memory_order_relaxed);
    wake();
    while (end - (cached_tail_ = tail_.load(std::memory_order_acquire)) > kWords) std::this_thread::yield();
  }

  static constexpr std::size_t kLineWords = kCacheLineBytes / sizeof(std::uint64_t);
  struct AlignedFree {
    void operator()(std::uint64_t* p) const { ::operator delete[](p, std::align_val_t{kCacheLineBytes}); }
  };

  // By who writes them, a cache line each: neither thread (read by both); the producer, at
  // every event; the writer. A field the producer writes on a line the writer reads for
  // every record would cost the producer a cross-core miss per event.
  std::uint32_t number_;
  std::unique_ptr<std::uint64_t[], AlignedFree> words_;
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t cached_tail_ = 0;  // the producer's last look at tail_
  std::atomic<std::uint64_t> waits_{0};

 public:
  // Per-thread timestamp cache (producer-owned): see Recorder::stamp.
  std::uint64_t stamp_group = ~std::uint64_t{0};
  std::uint64_t stamp_ticks = 0;

 private:
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<bool> retired_{false};
};

}  // namespace memlens::profiler
