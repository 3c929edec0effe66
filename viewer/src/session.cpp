#include "session.hpp"

#include <chrono>
#include <utility>

#include "memlens/input/input_file.hpp"

namespace memlens::viewer {

namespace {
constexpr auto kLook = std::chrono::milliseconds(200);  // how often a followed trace is looked at
}  // namespace

TraceSession::~TraceSession() { wait(); }

void TraceSession::wait() {
  {
    std::lock_guard lock(published_mutex_);
    stop_ = true;
  }
  stop_wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::lock_guard lock(published_mutex_);
  stop_ = false;
}

void TraceSession::open(const std::string& path) {
  wait();
  following_ = false;
  index_.reset(), at_.reset();  // they may read the follower's trace, about to go
  newest_index_.reset(), follower_.reset();
  state_.store(State::Loading, std::memory_order_release);
  progress_ = 0;
  pending_path_ = path;
  worker_ = std::thread([this, path] { load(path); });
}

void TraceSession::load(std::string path) {
  try {
    // A trace, or a PyTorch snapshot converted on the way in.
    auto reader = input::open_input(path);
    auto report =
        std::make_shared<analysis::Report>(analysis::analyze(*reader, {}, [this](std::uint64_t done, std::uint64_t total) {
          progress_.store(total ? static_cast<double>(done) / static_cast<double>(total) : 1.0, std::memory_order_relaxed);
        }));
    report->path = path;
    path_ = path;
    index_.reset();  // it reads the trace about to be replaced
    reader_ = std::move(reader);
    report_ = std::move(report);
    at_.reset();
    generation_.fetch_add(1, std::memory_order_acq_rel);
    state_.store(State::Ready, std::memory_order_release);
  } catch (const std::exception& e) {
    std::lock_guard lock(published_mutex_);
    error_ = e.what();
    state_.store(report_ ? State::Ready : State::Failed, std::memory_order_release);
  }
}

void TraceSession::follow(const std::string& path, std::int64_t pid) {
  wait();
  index_.reset(), at_.reset(), reader_.reset(), report_.reset();
  following_ = true;
  follower_ = std::make_unique<analysis::TraceFollower>(path, analysis::AnalysisOptions{}, pid);
  newest_index_.reset();
  index_file_ = newest_file_ = 0;
  published_ = shown_ = Published{};
  pending_path_ = path_ = path;
  progress_ = 0;
  state_.store(State::Loading, std::memory_order_release);
  worker_ = std::thread([this] { watch(); });
}

void TraceSession::watch() {
  const analysis::Progress progress = [this](std::uint64_t done, std::uint64_t total) {
    progress_.store(total ? static_cast<double>(done) / static_cast<double>(total) : 1.0, std::memory_order_relaxed);
  };
  while (true) {
    Published next;
    bool changed = false;
    std::string error;
    {
      std::lock_guard lock(follower_mutex_);
      try {
        changed = follower_->poll(progress);
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (changed) {
        // A copy: the window draws it while the follower goes on.
        if (const analysis::Report* r = follower_->report()) {
          next.report = std::make_shared<const analysis::Report>(*r);
          if (want_newest_.load(std::memory_order_relaxed)) next.newest = newest_memory(r->duration_ns);
        }
        next.state = follower_->state();
        next.reason = follower_->reason();
      }
    }
    std::unique_lock lock(published_mutex_);
    if (!error.empty()) {
      error_ = error;  // the trace shown stays; nothing more is followed
      if (published_.serial == 0) state_.store(State::Failed, std::memory_order_release);
      return;
    }
    if (changed) {
      next.serial = published_.serial + 1;
      published_ = std::move(next);
      if (wake_) wake_();
    }
    if (stop_wake_.wait_for(lock, kLook, [this] { return stop_; })) return;
  }
}

std::shared_ptr<const analysis::MemoryAt> TraceSession::newest_memory(std::uint64_t time_ns) {
  if (!newest_index_ || newest_file_ != follower_->generation()) {
    newest_index_ = std::make_unique<analysis::MemoryAtIndex>(*follower_->reader());
    newest_file_ = follower_->generation();
  }
  return std::make_shared<const analysis::MemoryAt>(newest_index_->at(time_ns));
}

bool TraceSession::take_update() {
  if (!following_) return false;
  std::lock_guard lock(published_mutex_);
  if (published_.serial == shown_.serial) return false;
  shown_ = published_;
  report_ = shown_.report;
  generation_.fetch_add(1, std::memory_order_acq_rel);
  // No report: the file was replaced and its successor has none yet.
  state_.store(report_ ? State::Ready : State::Loading, std::memory_order_release);
  return true;
}

std::string TraceSession::take_error() {
  if (state() == State::Loading && !following_) return "";
  std::lock_guard lock(published_mutex_);
  return std::exchange(error_, "");
}

const analysis::MemoryAt& TraceSession::memory_at(std::uint64_t time_ns) {
  if (!following_) {
    if (!index_) index_ = std::make_unique<analysis::MemoryAtIndex>(*reader_);
    if (!at_ || at_->time_ns != time_ns) at_ = index_->at(time_ns);
    return *at_;
  }
  if (shown_.newest && shown_.newest->time_ns == time_ns) return *shown_.newest;  // the worker's
  static const analysis::MemoryAt nothing;
  std::unique_lock lock(follower_mutex_, std::try_to_lock);
  if (!lock) return at_ ? *at_ : nothing;  // the worker is reading the trace: what was drawn stays
  const profiler::TraceReader* reader = follower_->reader();
  if (!reader) {
    index_.reset(), at_.reset();
    return nothing;
  }
  if (!index_ || index_file_ != follower_->generation()) {
    index_ = std::make_unique<analysis::MemoryAtIndex>(*reader);
    index_file_ = follower_->generation();
    at_.reset();
  }
  if (!at_ || at_->time_ns != time_ns) at_ = index_->at(time_ns);
  return *at_;
}

}  // namespace memlens::viewer
