#pragma once
// Where segments of device memory come from. An allocator asks a MemorySource for whole
// segments and hands out blocks of them; the source knows nothing about blocks.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "memlens/allocator/device.hpp"

namespace memlens {

class MemorySource {
 public:
  virtual ~MemorySource() = default;
  // A segment of at least `bytes`, or nullptr when the device has no room left.
  virtual void* acquire(std::size_t bytes) = 0;
  virtual void release(void* ptr, std::size_t bytes) = 0;
  virtual Device device() const = 0;
  // Total bytes the device can hold (SIZE_MAX when unbounded, as for the host).
  virtual std::size_t capacity() const = 0;
  // Bytes held by acquired segments.
  virtual std::size_t used() const = 0;
  // Bytes the device could still give, for OOM messages: on a GPU what the driver says is
  // free, since other processes hold memory too.
  virtual std::size_t available() const { return capacity() - used(); }

  // Virtual memory, for expandable segments: reserve address space that costs nothing,
  // then map and unmap pages of it, which count against the capacity like segments do.
  virtual bool supports_expandable() const { return false; }
  virtual void* reserve_range(std::size_t /*bytes*/) { return nullptr; }
  virtual bool map(void* /*at*/, std::size_t /*bytes*/) { return false; }
  virtual void unmap(void* /*at*/, std::size_t /*bytes*/) {}
  virtual void release_range(void* /*base*/, std::size_t /*bytes*/) {}
};

// Host memory from the C heap, 64-byte aligned: the cpu device's, and pinned memory's
// (cuda_host) where no CUDA backend can page-lock it.
class HostSource final : public MemorySource {
 public:
  explicit HostSource(Device device = kCPU) : device_(device) {}
  void* acquire(std::size_t bytes) override;
  void release(void* ptr, std::size_t bytes) override;
  Device device() const override { return device_; }
  std::size_t capacity() const override;
  std::size_t used() const override;

 private:
  Device device_;
  mutable std::mutex mu_;
  std::size_t used_ = 0;
};

// The simulated accelerator, modelled as a GPU's memory is: physical memory is a count of
// bytes (the capacity), and any free stretch of a large virtual range can be backed by
// it, as a GPU maps physical pages to any virtual range. So a segment request fails only
// when the device lacks the bytes, never because free memory is scattered; fragmentation
// is the caching allocator's own (its blocks inside segments), as on a GPU. The virtual
// range, kAddressSpaceFactor times the capacity, is reserved up front (so addresses never
// mix with the host's) and handed out first-fit; released pages go back to the OS.
class SimSource final : public MemorySource {
 public:
  // Backing::None hands out addresses only, with no host memory or address space behind
  // them: for replays, which decide where blocks go and never touch their bytes (the
  // range reserved otherwise, 8x the capacity, fails under a `ulimit -v`).
  enum class Backing : std::uint8_t { HostPages, None };
  explicit SimSource(std::size_t capacity, Backing backing = Backing::HostPages);
  ~SimSource() override;
  SimSource(const SimSource&) = delete;
  SimSource& operator=(const SimSource&) = delete;

  void* acquire(std::size_t bytes) override;
  void release(void* ptr, std::size_t bytes) override;
  Device device() const override { return Device(DeviceType::Sim); }
  std::size_t capacity() const override { return capacity_; }
  std::size_t used() const override;
  bool supports_expandable() const override { return true; }
  void* reserve_range(std::size_t bytes) override;
  bool map(void* at, std::size_t bytes) override;
  void unmap(void* at, std::size_t bytes) override;
  void release_range(void* base, std::size_t bytes) override;
  std::uintptr_t base() const { return reinterpret_cast<std::uintptr_t>(base_); }
  // The MEMLENS_SIM_MEMORY this device was made with ("" when unset): a program that sets
  // it otherwise later (under `memlens record` the device exists before main) is told at
  // the first segment that it came too late.
  void made_from_setting(std::string value) { setting_ = std::move(value); }

  // Granularity of the range: segments are multiples of it.
  static constexpr std::size_t kAlignment = 512;
  // Virtual addresses per byte of capacity: room for any pattern of live segments a
  // program can hold at once to find a free stretch.
  static constexpr std::size_t kAddressSpaceFactor = 8;

 private:
  char* base_ = nullptr;
  void check_setting();

  std::size_t capacity_;
  std::size_t range_;  // bytes of virtual address space reserved
  std::optional<std::string> setting_;
  std::atomic<bool> setting_checked_{false};
  Backing backing_;
  std::size_t next_range_ = 0;  // Backing::None: where the next expandable range starts, past range_
  mutable std::mutex mu_;
  std::map<std::size_t, std::size_t> free_;  // offset -> length, coalesced
  std::size_t used_ = 0;
};

// MEMLENS_SIM_MEMORY ("16GiB", "512MiB", "1073741824"); default 16 GiB. Throws DeviceError
// on a malformed value.
std::size_t sim_capacity_from_env();
// The sim device as MEMLENS_SIM_MEMORY makes it, watching the setting (made_from_setting).
std::unique_ptr<SimSource> sim_source_from_env();

}  // namespace memlens
