#include "writer_thread.hpp"

#include <array>
#include <iostream>

#include "ring_records.hpp"
#include "stack_walk.hpp"

namespace memlens::profiler {

void WriterThread::start(std::unique_ptr<TraceWriter> writer, const TickClock& clock, std::chrono::milliseconds flush_interval) {
  writer_ = std::move(writer);
  failed_ = false;
  clock_ = clock;
  flush_interval_ = flush_interval;
  name_ids_.clear();  // ids belong to one trace file
  {
    std::lock_guard l(mu_);
    running_ = true;
    stop_requested_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void WriterThread::stop() {
  {
    std::lock_guard l(mu_);
    if (!running_) return;
    stop_requested_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (!failed_) {
    try {
      writer_->close();
    } catch (const std::exception& e) {
      std::cerr << "memlens: recording stopped: " << e.what() << "\n";
    }
  }
  writer_.reset();  // after a failure, its destructor's last try at the footer stays silent
  std::lock_guard l(mu_);
  running_ = false;
}

void WriterThread::flush() {
  std::unique_lock l(mu_);
  if (!running_) return;
  std::uint64_t want = ++flush_requested_;
  wake_.notify_all();
  flushed_.wait(l, [&] { return flush_done_ >= want || stop_requested_; });
}

std::size_t WriterThread::drain() {
  if (failed_) return rings_.drain([](ThreadRing&, const std::uint64_t*, const RecordHeader&) {});
  return rings_.drain([&](ThreadRing& ring, const std::uint64_t* w, const RecordHeader& h) {
    Event e;
    ring_records::Pointers p = ring_records::decode(w, h, e);
    e.thread = ring.number();
    e.time_ns = clock_.to_ns(e.time_ns);
    if (e.kind == EventKind::Op) e.op.duration_ns = clock_.duration_ns(e.op.duration_ns);
    if (p.site) *e.site_field() = writer_->intern_site_address(reinterpret_cast<std::uint64_t>(p.site));
    if (p.depth > 0) {
      std::array<const void*, kMaxFrames> frames;
      int depth = std::min(p.depth, kMaxFrames);
      for (int i = 0; i < depth; ++i) frames[static_cast<std::size_t>(i)] = reinterpret_cast<const void*>(p.frames[i]);
      *e.stack_field() = writer_->intern_stack(frames.data(), depth);
    }
    if (p.name) {
      auto [it, fresh] = name_ids_.emplace(p.name, 0);
      if (fresh) it->second = writer_->intern_string(p.name);
      *e.name_field() = it->second;
    }
    writer_->write(e);
  });
}

void WriterThread::run() {
  {
    std::unique_lock l(mu_);
    wake_.wait_until(l, clock_.started() + TickClock::kSpan, [this] { return stop_requested_; });
  }
  clock_.finish();  // before any record's ticks become nanoseconds
  auto last_flush = std::chrono::steady_clock::now();
  bool busy = false;  // the last drain found records: look again before sleeping
  while (true) {
    bool stopping;
    std::uint64_t flush_wanted;
    {
      std::unique_lock l(mu_);
      // Drains come in batches, a short pause apart even while records keep coming, so
      // the writer does not poll the producers' ring heads without end (each poll pulls
      // the line a producer writes at every publish). A producer whose ring fills wakes
      // it at once.
      wake_.wait_for(l, busy ? kBusyPause : std::chrono::milliseconds(10), [this] {
        return stop_requested_ || flush_requested_ > flush_done_ || wake_requested_.load(std::memory_order_acquire);
      });
      wake_requested_.store(false, std::memory_order_relaxed);
      stopping = stop_requested_;
      flush_wanted = flush_requested_;
    }
    try {
      busy = drain() > 0;
      auto now = std::chrono::steady_clock::now();
      if (!failed_ && (stopping || flush_wanted > flush_done_ || now - last_flush >= flush_interval_)) {
        writer_->flush();
        last_flush = now;
      }
    } catch (const std::exception& e) {
      std::cerr << "memlens: recording stopped: " << e.what() << "\n";
      failed_ = true;
    }
    {
      std::lock_guard l(mu_);
      flush_done_ = flush_wanted;
    }
    flushed_.notify_all();
    if (stopping) return;
  }
}

}  // namespace memlens::profiler
