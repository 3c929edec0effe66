#include "memlens/allocator/memory_source.hpp"

#include "memlens/common/byte_text.hpp"
#include "memlens/common/number_text.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>

#include "memlens/allocator/errors.hpp"

namespace memlens {

// ---- HostSource

void* HostSource::acquire(std::size_t bytes) {
  std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p) {
    std::lock_guard lock(mu_);
    used_ += bytes;
  }
  return p;
}

void HostSource::release(void* ptr, std::size_t bytes) {
  std::free(ptr);
  std::lock_guard lock(mu_);
  used_ -= bytes;
}

std::size_t HostSource::capacity() const {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                               : std::numeric_limits<std::size_t>::max();
}

std::size_t HostSource::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

// ---- SimSource

SimSource::SimSource(std::size_t capacity, Backing backing) : capacity_(capacity / kAlignment * kAlignment), backing_(backing) {
  if (capacity_ == 0) throw DeviceError("sim: capacity must be at least 512 bytes");
  if (capacity_ > (std::size_t{1} << 44) / kAddressSpaceFactor)
    throw DeviceError("sim: capacity " + std::to_string(capacity_) + " bytes is more than 2 TiB");
  range_ = capacity_ * kAddressSpaceFactor;
  free_.emplace(0, range_);
  if (backing_ == Backing::None) {
    base_ = reinterpret_cast<char*>(std::uintptr_t{1} << 45);  // addresses as a device's look, never dereferenced
    next_range_ = range_;
    return;
  }
  // Reserve the whole virtual range now; pages become real only when written.
  void* p = mmap(nullptr, range_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw DeviceError("sim: cannot reserve " + std::to_string(range_) + " bytes of address space: " + std::strerror(errno));
  base_ = static_cast<char*>(p);
}

SimSource::~SimSource() {
  if (backing_ == Backing::HostPages) munmap(base_, range_);
}

void SimSource::check_setting() {
  if (!setting_ || setting_checked_.exchange(true, std::memory_order_relaxed)) return;
  const char* now = std::getenv("MEMLENS_SIM_MEMORY");
  const std::string value = now ? now : "";
  if (value == *setting_) return;
  std::cerr << "memlens: MEMLENS_SIM_MEMORY=" << value << " came too late: the simulated device was made before it, with "
            << format_bytes(static_cast<std::int64_t>(capacity_))
            << " (under `memlens record` devices exist before main); set it where the program starts\n";
}

void* SimSource::acquire(std::size_t bytes) {
  check_setting();
  std::size_t need = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (need == 0) need = kAlignment;
  std::lock_guard lock(mu_);
  if (used_ + need > capacity_) return nullptr;  // the device lacks the bytes (mapped expandable pages count too)
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    std::size_t offset = it->first;
    std::size_t rest = it->second - need;
    free_.erase(it);
    if (rest) free_.emplace(offset + need, rest);
    used_ += need;
    return base_ + offset;
  }
  return nullptr;
}

void SimSource::release(void* ptr, std::size_t bytes) {
  std::size_t len = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (len == 0) len = kAlignment;
  std::size_t offset = static_cast<std::size_t>(static_cast<char*>(ptr) - base_);
  // Give whole pages back so a freed segment stops costing host memory.
  std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t first = (offset + page - 1) / page * page;
  std::size_t last = (offset + len) / page * page;
  if (last > first && backing_ == Backing::HostPages) madvise(base_ + first, last - first, MADV_DONTNEED);

  std::lock_guard lock(mu_);
  used_ -= len;
  auto [it, inserted] = free_.emplace(offset, len);
  (void)inserted;
  if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

void* SimSource::reserve_range(std::size_t bytes) {
  check_setting();
  if (backing_ == Backing::None) {
    std::lock_guard lock(mu_);
    char* at = base_ + next_range_;
    next_range_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
    return at;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

bool SimSource::map(void*, std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (used_ + bytes > capacity_) return false;
  used_ += bytes;
  return true;
}

void SimSource::unmap(void* at, std::size_t bytes) {
  if (backing_ == Backing::HostPages) madvise(at, bytes, MADV_DONTNEED);
  std::lock_guard lock(mu_);
  used_ -= bytes;
}

void SimSource::release_range(void* base, std::size_t bytes) {
  if (backing_ == Backing::HostPages) munmap(base, bytes);
}

std::size_t SimSource::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

// ---- configuration

std::size_t sim_capacity_from_env() {
  const char* env = std::getenv("MEMLENS_SIM_MEMORY");
  if (!env || !*env) return std::size_t{16} << 30;
  try {
    return parse_byte_size(env);
  } catch (const NumberError& e) {
    throw DeviceError(std::string("MEMLENS_SIM_MEMORY: ") + e.what());
  }
}

std::unique_ptr<SimSource> sim_source_from_env() {
  auto source = std::make_unique<SimSource>(sim_capacity_from_env());
  const char* env = std::getenv("MEMLENS_SIM_MEMORY");
  source->made_from_setting(env ? env : "");
  return source;
}

}  // namespace memlens
