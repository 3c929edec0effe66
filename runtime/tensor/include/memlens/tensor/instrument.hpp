#pragma once
// The runtime's small emit API. The runtime reports views, copies, ops and category
// changes to one installed Sink (the recorder installs itself); allocator events go
// through AllocatorObserver. The runtime knows nothing of traces.
#include <atomic>
#include <cstdint>
#include <vector>

#include "memlens/common/device.hpp"
#include "memlens/common/event_kinds.hpp"
#include "memlens/common/scalar_type.hpp"

namespace memlens::instrument {

// The trace's own enums (memlens/common/event_kinds.hpp): what the runtime says is what
// the trace stores.
using memlens::Category;
using memlens::CopyReason;
using memlens::kCategoryCount;
using memlens::ViewKind;

using Dims = std::vector<std::int64_t>;

// One of an op's tensors, as the trace records it.
struct OpTensor {
  const Dims* sizes = nullptr;
  const Dims* strides = nullptr;  // in elements, as many as the sizes
  ScalarType dtype = ScalarType::Float32;
  Device device;
  std::uint64_t storage = 0;  // its storage's id
  std::int64_t offset = 0;    // into the storage, in elements
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void on_view(std::uint64_t tensor, std::uint64_t storage, const Device& d, ViewKind kind, ScalarType dtype,
                       const Dims& sizes, const Dims& strides, std::int64_t offset) = 0;
  virtual void on_copy(const Device& src, const void* src_addr, const Device& dst, const void* dst_addr, std::uint64_t bytes,
                       CopyReason reason) = 0;
  // `broadcasting`: an elementwise op, whose inputs broadcast to the output's shape (an
  // mm's output may be larger than its inputs without any broadcast). The op's device is
  // its output's.
  virtual void on_op(const char* name, const OpTensor* inputs, int n_inputs, const OpTensor& output, std::uint64_t output_bytes,
                     std::uint64_t start_ns, bool broadcasting) = 0;
  virtual void on_category(std::uint64_t storage, const Device& d, Category c) = 0;
  // Monotonic nanoseconds on the recorder's clock (ops are timed with it).
  virtual std::uint64_t now_ns() = 0;
};

namespace detail {
inline std::atomic<Sink*> installed{nullptr};
inline thread_local int api_depth = 0;
inline thread_local const void* api_site = nullptr;
inline thread_local std::uint64_t event_group = 0;                      // see current_event_group()
inline thread_local int group_depth = 0;                                // open EventGroups
inline thread_local Category new_storage_category = Category::Unknown;  // see NewStorageCategory
}  // namespace detail

// The sink while recording, else null: one relaxed load on every instrumented path.
inline Sink* sink() { return detail::installed.load(std::memory_order_acquire); }
inline void set_sink(Sink* s) { detail::installed.store(s, std::memory_order_release); }

// The call site of the outermost public runtime call on this thread: the return address
// into the user's code, symbolised when the trace is read.
inline const void* current_site() { return detail::api_site; }
// Whether the runtime call running now is the outermost: the program's own code called it.
inline bool called_by_program() { return detail::api_depth == 1; }

struct ApiEntry {
  explicit ApiEntry(const void* ret) {
    if (detail::api_depth++ == 0) {
      detail::api_site = ret;
      ++detail::event_group;
    }
  }
  ~ApiEntry() { --detail::api_depth; }
  ApiEntry(const ApiEntry&) = delete;
  ApiEntry& operator=(const ApiEntry&) = delete;
};

// User code the runtime calls back (a forward the user wrote, a checkpointed function):
// the runtime calls inside it are outermost again, so their sites are the user's lines,
// not the line that called into the runtime.
class UserCode {
 public:
  UserCode() : depth_(detail::api_depth), site_(detail::api_site) { detail::api_depth = 0; }
  ~UserCode() { detail::api_depth = depth_, detail::api_site = site_; }
  UserCode(const UserCode&) = delete;
  UserCode& operator=(const UserCode&) = delete;

 private:
  int depth_;
  const void* site_;
};

// One allocator operation (a storage's allocation or free) as one moment: outside any
// runtime call (a tensor freed in user code) it opens a group of its own.
struct EventGroup {
  EventGroup() : own_(detail::api_depth == 0) {
    if (own_ && detail::group_depth++ == 0) ++detail::event_group;
  }
  ~EventGroup() {
    if (own_) --detail::group_depth;
  }
  EventGroup(const EventGroup&) = delete;
  EventGroup& operator=(const EventGroup&) = delete;

 private:
  bool own_;
};

// Storages created on this thread while it lives get category `c` from birth (backward's
// own temporaries); a later category event (a .grad, a gradient in flight) overrides it.
class NewStorageCategory {
 public:
  explicit NewStorageCategory(Category c) : prev_(detail::new_storage_category) { detail::new_storage_category = c; }
  ~NewStorageCategory() { detail::new_storage_category = prev_; }
  NewStorageCategory(const NewStorageCategory&) = delete;
  NewStorageCategory& operator=(const NewStorageCategory&) = delete;

 private:
  Category prev_;
};
inline Category new_storage_category() { return detail::new_storage_category; }

// The events of one group are one moment to the trace, so the recorder reads its clock
// once for them: an outermost runtime call, or one allocator operation outside any (a
// tensor freed in user code). 0 when outside both: every event reads the clock.
inline std::uint64_t current_event_group() { return detail::api_depth || detail::group_depth ? detail::event_group : 0; }

}  // namespace memlens::instrument

// At the top of every public runtime function: remembers where the user called from.
#define MEMLENS_API_ENTRY() ::memlens::instrument::ApiEntry memlens_api_entry_(__builtin_return_address(0))
