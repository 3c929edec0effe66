#include "collector_trace.hpp"

#include <cstdio>

namespace memlens::cupti {

CollectorTrace::CollectorTrace(std::unique_ptr<profiler::TraceWriter> writer) : writer_(std::move(writer)) {}

void CollectorTrace::fail(const std::exception& e) {
  std::fprintf(stderr, "memlens-cupti: the trace ends here: %s\n", e.what());
  closed_ = true;
}

void CollectorTrace::write(const std::vector<profiler::Event>& events) {
  std::lock_guard l(mu_);
  if (closed_) {
    if (dropped_ == 0 && !events.empty())
      std::fprintf(stderr, "memlens-cupti: dropping activity CUPTI delivered after the trace was closed\n");
    dropped_ += events.size();
    return;
  }
  try {
    for (const auto& e : events) writer_->write(e);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void CollectorTrace::flush() {
  std::lock_guard l(mu_);
  if (closed_) return;
  try {
    writer_->flush();
  } catch (const std::exception& e) {
    fail(e);
  }
}

void CollectorTrace::close() {
  std::lock_guard l(mu_);
  if (closed_) return;
  closed_ = true;
  try {
    writer_->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memlens-cupti: closing the trace: %s\n", e.what());
  }
}

std::uint32_t CollectorTrace::intern_string(const std::string& s) {
  std::lock_guard l(mu_);
  return writer_->intern_string(s);
}

std::uint64_t CollectorTrace::dropped() const {
  std::lock_guard l(mu_);
  return dropped_;
}

}  // namespace memlens::cupti
