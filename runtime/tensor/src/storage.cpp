#include "memlens/tensor/storage.hpp"

#include <atomic>

#include "memlens/tensor/instrument.hpp"

namespace memlens {

namespace {
std::atomic<std::uint64_t> next_storage_id{1};
}

StorageImpl::StorageImpl(std::size_t nbytes, const Device& device)
    : data_(nullptr),
      nbytes_(nbytes),
      device_(device),
      allocator_(&allocator_for(device)),
      id_(next_storage_id.fetch_add(1, std::memory_order_relaxed)) {
  instrument::EventGroup moment;
  data_ = allocator_->allocate(nbytes, current_stream(), id_);
  if (instrument::Category c = instrument::new_storage_category(); c != instrument::Category::Unknown)
    if (auto* sink = instrument::sink()) sink->on_category(id_, device_, c);
}

StorageImpl::~StorageImpl() {
  instrument::EventGroup moment;
  allocator_->deallocate(data_);
}

void StorageImpl::record_stream(StreamId s) { allocator_->record_stream(data_, s); }

}  // namespace memlens
