#include "writer_thread.hpp"

#include <algorithm>
#include <array>
#include <iostream>

#include "ring_records.hpp"
#include "stack_walk.hpp"

namespace memlens::profiler {

void WriterThread::start(std::unique_ptr<TraceWriter> writer, const TickClock& clock, std::chrono::milliseconds flush_interval,
                         std::vector<std::uint64_t> first) {
  writer_ = std::move(writer);
  next_ = std::move(first);
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

std::size_t WriterThread::drain(bool stopping) {
  if (failed_) return rings_.discard();
  // The records published now are this drain's: each pass goes up to the same limits, so
  // a drain ends even while producers go on publishing.
  const std::vector<ThreadRing*> rings = rings_.rings();
  std::vector<std::uint64_t> limits;
  std::vector<bool> retired;
  for (ThreadRing* ring : rings) {
    retired.push_back(ring->retired());  // before its head: nothing is published after it
    limits.push_back(ring->published());
  }
  std::size_t written = 0;
  for (bool force = false;;) {
    bool waited = false;
    const std::size_t n = pass(rings, limits, force, waited);
    written += n;
    if (waited && n > 0) continue;  // what was written may be what a waiting record waits for
    if (!waited || force || !stopping) break;
    force = true;  // at stop, what still waits (a mark that raced the stop) goes in its thread's order
  }
  std::vector<ThreadRing*> ended;
  for (std::size_t i = 0; i < rings.size(); ++i)
    if (retired[i] && rings[i]->drained()) ended.push_back(rings[i]);
  rings_.free(ended);
  return written;
}

std::size_t WriterThread::pass(const std::vector<ThreadRing*>& rings, const std::vector<std::uint64_t>& limits, bool force,
                               bool& waited) {
  // The marks not yet written, in every ring listed after the heads were read: a mark that
  // happened before a record within a limit was published (its ring made) before it.
  barrier_.assign(next_.size(), ~std::uint64_t{0});
  for (ThreadRing* ring : rings_.rings())
    ring->peek([&](const std::uint64_t* w, const RecordHeader& h) {
      const ring_records::OrderKey k = ring_records::order_key(w, h);
      for (std::size_t d = 0; d < k.devices && d < barrier_.size(); ++d) barrier_[d] = std::min(barrier_[d], k.seen[d]);
    });
  std::size_t n = 0;
  for (std::size_t i = 0; i < rings.size(); ++i)
    n += rings[i]->drain(
        [&](const std::uint64_t* w, const RecordHeader& h) {
          if (!force && !in_order(w, h)) {
            waited = true;
            return false;
          }
          write(*rings[i], w, h);
          return true;
        },
        limits[i]);
  return n;
}

// An allocator event goes when it is its device's next and no mark waiting to be written
// saw it still to come; a mark, once the allocator events it saw are written.
bool WriterThread::in_order(const std::uint64_t* w, const RecordHeader& h) const {
  const ring_records::OrderKey k = ring_records::order_key(w, h);
  if (k.allocator) return k.device >= next_.size() || (k.sequence <= next_[k.device] && k.sequence < barrier_[k.device]);
  for (std::size_t d = 0; d < k.devices && d < next_.size(); ++d)
    if (k.seen[d] > next_[d]) return false;
  return true;
}

void WriterThread::write(const ThreadRing& ring, const std::uint64_t* w, const RecordHeader& h) {
  const ring_records::OrderKey k = ring_records::order_key(w, h);
  if (k.allocator && k.device < next_.size()) next_[k.device] = std::max(next_[k.device], k.sequence + 1);
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
    auto it = name_ids_.find(p.name);
    if (it == name_ids_.end()) it = name_ids_.emplace(p.name, writer_->intern_string(p.name)).first;
    *e.name_field() = it->second;
  }
  writer_->write(e);
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
      busy = drain(stopping) > 0;
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
