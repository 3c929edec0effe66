#include "session.hpp"

#include <utility>

#include "memlens/input/input_file.hpp"

namespace memlens::viewer {

TraceSession::~TraceSession() { wait(); }

void TraceSession::wait() {
  if (worker_.joinable()) worker_.join();
}

void TraceSession::open(const std::string& path) {
  wait();
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
        std::make_unique<analysis::Report>(analysis::analyze(*reader, {}, [this](std::uint64_t done, std::uint64_t total) {
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
    error_ = e.what();
    state_.store(report_ ? State::Ready : State::Failed, std::memory_order_release);
  }
}

std::string TraceSession::take_error() {
  if (state() == State::Loading) return "";
  return std::exchange(error_, "");
}

const analysis::MemoryAt& TraceSession::memory_at(std::uint64_t time_ns) {
  if (!index_) index_ = std::make_unique<analysis::MemoryAtIndex>(*reader_);
  if (!at_ || at_->time_ns != time_ns) at_ = index_->at(time_ns);
  return *at_;
}

}  // namespace memlens::viewer
