// The caching allocator. Policy and structure follow PyTorch's DeviceCachingAllocator;
// the comments name its functions where ours do the same job.
#include "memlens/allocator/caching_allocator.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "memlens/allocator/errors.hpp"
#include "memlens/allocator/memory.hpp"

namespace memlens {

using Kind = EventKind;

struct CachingAllocator::Block {
  Block(std::size_t size, StreamId stream, char* ptr, BlockPool* pool, Expandable* expandable = nullptr)
      : size(size), stream(stream), ptr(ptr), pool(pool), expandable(expandable) {}
  std::size_t size;
  std::size_t requested = 0;
  std::uint64_t owner = 0;  // the storage it was handed to
  StreamId stream;
  char* ptr;
  BlockPool* pool;
  Expandable* expandable = nullptr;
  char* segment = nullptr;  // start of the segment it belongs to (segments never move)
  bool allocated = false;
  Block* prev = nullptr;
  Block* next = nullptr;
  std::vector<StreamId> stream_uses;  // other streams that used it (record_stream)
  int event_count = 0;                // stream markers still outstanding after free
  bool is_split() const { return prev || next; }
  std::uintptr_t address() const { return reinterpret_cast<std::uintptr_t>(ptr); }
};

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

struct CachingAllocator::BlockPool {
  explicit BlockPool(Pool k) : kind(k) {}
  Pool kind;
  BlockSet blocks;  // free blocks
};

// One growing segment per (stream, pool): address space reserved up front, pages mapped
// at its end as it grows (PyTorch's ExpandableSegment over cuMemMap).
struct CachingAllocator::Expandable {
  char* base;
  std::size_t reserved;
  std::size_t mapped = 0;
  StreamId stream;
  BlockPool* pool;
  Block* last = nullptr;  // the block ending at base + mapped
};

CachingAllocator::CachingAllocator(std::unique_ptr<MemorySource> source, AllocatorConfig config, StreamEvents* events)
    : source_(std::move(source)),
      config_(config),
      events_(events ? events : &SimStreams::instance()),
      small_(std::make_unique<BlockPool>(Pool::Small)),
      large_(std::make_unique<BlockPool>(Pool::Large)) {
  active_.reserve(1024);
  if (config_.expandable_segments && !source_->supports_expandable())
    throw Error("expandable_segments:True is not supported on " + source_->device().str());
}

CachingAllocator::~CachingAllocator() {
  // Give every segment back; blocks still allocated by then belong to a dying process.
  std::vector<Block*> all;
  for (auto& [addr, head] : segments_)
    for (Block* b = head; b; b = b->next) all.push_back(b);
  for (auto& e : expandables_)
    if (e->last)
      for (Block* b = e->last; b; b = b->prev) all.push_back(b);
  for (auto& [addr, head] : segments_) {
    std::size_t size = 0;
    for (Block* b = head; b; b = b->next) size += b->size;
    source_->release(head->ptr, size);
  }
  for (auto& e : expandables_) {
    if (e->mapped) source_->unmap(e->base, e->mapped);
    source_->release_range(e->base, e->reserved);
  }
  for (Block* b : all) delete b;
  for (Block* b : spare_blocks_) delete b;
}

CachingAllocator::Block* CachingAllocator::new_block(std::size_t size, StreamId stream, char* ptr, BlockPool* pool,
                                                     Expandable* e) {
  if (spare_blocks_.empty()) return new Block(size, stream, ptr, pool, e);
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  *b = Block(size, stream, ptr, pool, e);
  return b;
}

void CachingAllocator::pool_insert(BlockPool* pool, Block* b) {
  if (!spare_node_) {
    pool->blocks.insert(b);
    return;
  }
  spare_node_.value() = b;
  pool->blocks.insert(std::move(spare_node_));
}

template <class Key>
void CachingAllocator::pool_erase(BlockPool* pool, Key key) {
  auto node = pool->blocks.extract(key);
  if (!spare_node_) spare_node_ = std::move(node);
}

void CachingAllocator::delete_block(Block* b) {
  if (spare_blocks_.size() < 256) spare_blocks_.push_back(b);
  else delete b;
}

// ---- sizes (PyTorch's round_size and get_allocation_size)

std::size_t CachingAllocator::round_size(std::size_t bytes) const {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  std::size_t div = config_.roundup_power2_divisions;
  if (div > 1 && bytes > kMinBlockSize * div) {
    if (std::has_single_bit(bytes)) return bytes;
    std::size_t floor = std::bit_floor(bytes);
    std::size_t step = floor / div;
    if (step == 0) return floor << 1;
    std::size_t down = bytes & ~(step - 1);
    return down == bytes ? bytes : down + step;
  }
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

std::size_t CachingAllocator::allocation_size(std::size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

// ---- allocation

void* CachingAllocator::allocate(std::size_t bytes, StreamId stream, std::uint64_t owner) {
  std::lock_guard lock(mu_);
  process_events();
  std::size_t size = round_size(bytes);
  Request r{size, bytes, stream, size <= kSmallSize ? small_.get() : large_.get()};
  Block* b = get_free_block(r);
  if (!b) {
    // Staged like PyTorch's malloc: a new segment; else free oversize cached blocks and
    // retry; else free every cached segment, count a retry, and try a last time.
    bool got = alloc_segment(r) || (release_available_cached_blocks(r) && alloc_segment(r));
    if (!got) {
      release_cached_blocks();
      notify({.kind = Kind::AllocRetry,
              .pool = r.pool->kind,
              .size = static_cast<std::int64_t>(size),
              .requested = static_cast<std::int64_t>(bytes),
              .stream = stream});
      got = alloc_segment(r);
    }
    if (!got || !(b = get_free_block(r))) throw_oom(r);
  }
  bool already_split = b->is_split() && !b->expandable;
  std::int64_t split_count = 0, split_bytes = 0;
  if (should_split(b, size)) {
    // The front part serves the request; the rest stays free in the pool.
    Block* rest = new_block(b->size - size, b->stream, b->ptr + size, b->pool, b->expandable);
    rest->segment = b->segment;
    rest->prev = b;
    rest->next = b->next;
    if (rest->next) rest->next->prev = rest;
    else if (b->expandable) b->expandable->last = rest;
    b->next = rest;
    b->size = size;
    pool_insert(r.pool, rest);
    if (!b->expandable) {
      if (already_split) {
        split_bytes = -static_cast<std::int64_t>(size);
      } else {
        split_bytes = static_cast<std::int64_t>(rest->size);
        split_count = 1;
      }
    }
  } else if (already_split) {
    split_bytes = -static_cast<std::int64_t>(b->size);
    split_count = -1;
  }
  b->allocated = true;
  b->requested = bytes;
  b->owner = owner;
  active_.emplace(b->ptr, b);
  notify({.kind = Kind::Alloc,
          .pool = r.pool->kind,
          .address = b->address(),
          .segment = reinterpret_cast<std::uintptr_t>(b->segment),
          .size = static_cast<std::int64_t>(b->size),
          .requested = static_cast<std::int64_t>(bytes),
          .storage = owner,
          .split_count = split_count,
          .split_bytes = split_bytes,
          .stream = stream});
  return b->ptr;
}

CachingAllocator::Block* CachingAllocator::get_free_block(const Request& r) {
  Block key(r.size, r.stream, nullptr, r.pool);
  auto it = r.pool->blocks.lower_bound(&key);
  if (it == r.pool->blocks.end() || (*it)->stream != r.stream) return nullptr;
  Block* b = *it;
  std::size_t max_split = config_.max_split_size;
  // Do not hand an oversize block to a small request, nor a much larger one to a large request.
  if (!b->expandable && r.size < max_split && b->size >= max_split) return nullptr;
  if (!b->expandable && r.size >= max_split && b->size >= r.size + kLargeBuffer) return nullptr;
  pool_erase(r.pool, it);
  return b;
}

bool CachingAllocator::should_split(const Block* b, std::size_t size) const {
  std::size_t remaining = b->size - size;
  if (b->pool->kind == Pool::Small || b->expandable) return remaining >= kMinBlockSize;
  return size < config_.max_split_size && remaining > kSmallSize;
}

bool CachingAllocator::alloc_segment(const Request& r) {
  if (config_.expandable_segments) return grow_expandable(r);
  std::size_t size = allocation_size(r.size);
  void* p = source_->acquire(size);
  if (!p) {
    notify({.kind = Kind::AllocFailed,
            .pool = r.pool->kind,
            .size = static_cast<std::int64_t>(size),
            .requested = static_cast<std::int64_t>(r.requested),
            .stream = r.stream});
    return false;
  }
  Block* b = new_block(size, r.stream, static_cast<char*>(p), r.pool);
  b->segment = b->ptr;
  segments_.emplace(b->address(), b);
  pool_insert(r.pool, b);
  notify({.kind = Kind::SegmentAlloc,
          .pool = r.pool->kind,
          .address = b->address(),
          .size = static_cast<std::int64_t>(size),
          .stream = r.stream});
  return true;
}

bool CachingAllocator::grow_expandable(const Request& r) {
  Expandable* seg = nullptr;
  for (auto& e : expandables_)
    if (e->stream == r.stream && e->pool == r.pool) seg = e.get();
  if (!seg) {
    std::size_t reserve = (source_->capacity() + kPageSize - 1) / kPageSize * kPageSize;
    void* base = source_->reserve_range(reserve);
    if (!base) return false;
    expandables_.push_back(std::make_unique<Expandable>(Expandable{static_cast<char*>(base), reserve, 0, r.stream, r.pool}));
    seg = expandables_.back().get();
  }
  Block* tail = seg->last && !seg->last->allocated && seg->last->event_count == 0 ? seg->last : nullptr;
  std::size_t have = tail ? tail->size : 0;
  std::size_t grow = (r.size - have + kPageSize - 1) / kPageSize * kPageSize;
  if (seg->mapped + grow > seg->reserved || !source_->map(seg->base + seg->mapped, grow)) {
    notify({.kind = Kind::AllocFailed,
            .pool = r.pool->kind,
            .size = static_cast<std::int64_t>(grow),
            .requested = static_cast<std::int64_t>(r.requested),
            .stream = r.stream});
    return false;
  }
  char* at = seg->base + seg->mapped;
  seg->mapped += grow;
  notify({.kind = Kind::SegmentAlloc,
          .pool = r.pool->kind,
          .address = reinterpret_cast<std::uintptr_t>(at),
          .size = static_cast<std::int64_t>(grow),
          .stream = r.stream});
  if (tail) {
    pool_erase(r.pool, tail);
    tail->size += grow;
    pool_insert(r.pool, tail);
  } else {
    Block* b = new_block(grow, r.stream, at, r.pool, seg);
    b->segment = seg->base;
    b->prev = seg->last;
    if (seg->last) seg->last->next = b;
    seg->last = b;
    pool_insert(r.pool, b);
  }
  return true;
}

// PyTorch's release_available_cached_blocks: with max_split_size set, free oversize
// cached blocks (the smallest that covers the request, else the largest ones).
bool CachingAllocator::release_available_cached_blocks(const Request& r) {
  if (config_.max_split_size == std::numeric_limits<std::size_t>::max() || config_.expandable_segments) return false;
  std::vector<Block*> candidates;
  for (Block* b : r.pool->blocks)
    if (b->stream == r.stream && b->size >= config_.max_split_size && !b->is_split()) candidates.push_back(b);
  if (candidates.empty()) return false;
  auto fit = std::find_if(candidates.begin(), candidates.end(), [&](Block* b) { return b->size >= r.size; });
  if (fit != candidates.end()) {
    release_segment(*fit);
    return true;
  }
  std::size_t released = 0;
  for (auto it = candidates.rbegin(); it != candidates.rend() && released < r.size; ++it) {
    released += (*it)->size;
    release_segment(*it);
  }
  return true;
}

void CachingAllocator::release_segment(Block* b) {
  pool_erase(b->pool, b);
  segments_.erase(b->address());
  source_->release(b->ptr, b->size);
  notify({.kind = Kind::SegmentFree,
          .pool = b->pool->kind,
          .address = b->address(),
          .size = static_cast<std::int64_t>(b->size),
          .stream = b->stream});
  delete_block(b);
}

// PyTorch's release_cached_blocks: every whole free segment goes back.
void CachingAllocator::release_cached_blocks() {
  for (BlockPool* pool : {small_.get(), large_.get()}) {
    std::vector<Block*> whole;
    for (Block* b : pool->blocks)
      if (!b->is_split() && !b->expandable) whole.push_back(b);
    for (Block* b : whole) release_segment(b);
  }
  shrink_expandable();
}

// Unmaps the free pages at the end of each expandable segment.
void CachingAllocator::shrink_expandable() {
  for (auto& seg : expandables_) {
    Block* tail = seg->last;
    if (!tail || tail->allocated || tail->event_count > 0) continue;
    std::uintptr_t start = (tail->address() + kPageSize - 1) / kPageSize * kPageSize;
    std::uintptr_t end = reinterpret_cast<std::uintptr_t>(seg->base) + seg->mapped;
    if (start >= end) continue;
    std::size_t cut = end - start;
    source_->unmap(reinterpret_cast<void*>(start), cut);
    seg->mapped -= cut;
    notify({.kind = Kind::SegmentFree,
            .pool = seg->pool->kind,
            .address = start,
            .size = static_cast<std::int64_t>(cut),
            .stream = seg->stream});
    pool_erase(seg->pool, tail);
    tail->size -= cut;
    if (tail->size == 0) {
      seg->last = tail->prev;
      if (seg->last) seg->last->next = nullptr;
      delete_block(tail);
    } else {
      pool_insert(seg->pool, tail);
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mu_);
  process_events();
  release_cached_blocks();
}

// ---- freeing

void CachingAllocator::deallocate(void* ptr) {
  if (!ptr) return;
  std::lock_guard lock(mu_);
  auto it = active_.find(ptr);
  if (it == active_.end() || !it->second->allocated) return;
  Block* b = it->second;
  b->allocated = false;
  notify({.kind = Kind::FreeRequested,
          .pool = b->pool->kind,
          .address = b->address(),
          .size = static_cast<std::int64_t>(b->size),
          .requested = static_cast<std::int64_t>(b->requested),
          .storage = b->owner,
          .stream = b->stream});
  if (!b->stream_uses.empty()) {
    // Other streams may still read it: wait for their recorded work (insert_events).
    for (StreamId s : b->stream_uses) {
      pending_.push_back({b, {s, events_->record(s)}});
      ++b->event_count;
    }
    b->stream_uses.clear();
    return;
  }
  free_block(b);
}

void CachingAllocator::record_stream(void* ptr, StreamId stream) {
  std::lock_guard lock(mu_);
  auto it = active_.find(ptr);
  if (it == active_.end()) return;
  Block* b = it->second;
  if (stream != b->stream && std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end())
    b->stream_uses.push_back(stream);
}

void CachingAllocator::process_events() {
  if (pending_.empty()) return;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto [b, marker] = *it;
    if (!events_->query(marker.first, marker.second)) {
      ++it;
      continue;
    }
    it = pending_.erase(it);
    if (--b->event_count == 0) free_block(b);
  }
}

void CachingAllocator::free_block(Block* b) {
  active_.erase(b->ptr);
  std::int64_t original = static_cast<std::int64_t>(b->size);
  std::int64_t split_blocks = 0, split_bytes = 0;
  for (Block* candidate : {b->prev, b->next}) {
    std::size_t subsumed = try_merge(b, candidate);
    if (subsumed > 0) {
      --split_blocks;
      split_bytes -= static_cast<std::int64_t>(subsumed);
    }
  }
  std::uint64_t owner = std::exchange(b->owner, 0);
  b->requested = 0;
  pool_insert(b->pool, b);
  if (b->is_split()) {
    ++split_blocks;
    split_bytes += static_cast<std::int64_t>(b->size);
  }
  if (b->expandable) split_blocks = split_bytes = 0;
  notify({.kind = Kind::FreeCompleted,
          .pool = b->pool->kind,
          .address = b->address(),
          .size = original,
          .storage = owner,
          .split_count = split_blocks,
          .split_bytes = split_bytes,
          .stream = b->stream});
}

std::size_t CachingAllocator::try_merge(Block* dst, Block* src) {
  if (!src || src->allocated || src->event_count > 0) return 0;
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
    else if (!dst->expandable) {
      // dst becomes the segment's head.
      segments_.erase(src->address());
      segments_.emplace(dst->address(), dst);
    }
  } else {
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
    else if (dst->expandable) dst->expandable->last = dst;
  }
  std::size_t subsumed = src->size;
  dst->size += subsumed;
  pool_erase(src->pool, src);
  delete_block(src);
  return subsumed;
}

// ---- reporting

std::size_t CachingAllocator::largest_free_block() const {
  std::size_t best = 0;
  for (BlockPool* pool : {small_.get(), large_.get()})
    for (Block* b : pool->blocks) best = std::max(best, b->size);
  return best;
}

std::size_t CachingAllocator::cached_free_bytes() const {
  std::size_t total = 0;
  for (BlockPool* pool : {small_.get(), large_.get()})
    for (Block* b : pool->blocks) total += b->size;
  return total;
}

void CachingAllocator::throw_oom(const Request& r) {
  const AllocatorStats& s = stats_locked();
  auto cap = static_cast<std::int64_t>(source_->capacity());
  auto device_free = static_cast<std::int64_t>(source_->available());
  std::int64_t allocated = s.allocated_bytes.all.current, reserved = s.reserved_bytes.all.current;
  auto largest = static_cast<std::int64_t>(largest_free_block());
  auto cached = static_cast<std::int64_t>(cached_free_bytes());
  notify({.kind = Kind::Oom,
          .pool = r.pool->kind,
          .size = static_cast<std::int64_t>(r.size),
          .requested = static_cast<std::int64_t>(r.requested),
          .stream = r.stream,
          .device_free = device_free,
          .reserved = reserved,
          .allocated = allocated,
          .largest_free_block = largest});
  throw OutOfMemoryError(
      device().str() + " out of memory. Tried to allocate " + format_bytes(static_cast<std::int64_t>(r.size)) +
      ". Device has a total capacity of " + format_bytes(cap) + " of which " + format_bytes(device_free) +
      " is free. Of the allocated memory " + format_bytes(allocated) + " is allocated by tensors, and " +
      format_bytes(reserved - allocated) + " is reserved but unallocated (" + format_bytes(cached) +
      " cached in free blocks, the largest " + format_bytes(largest) +
      "). If reserved but unallocated memory is large, try MEMLENS_ALLOC_CONF=expandable_segments:True to avoid "
      "fragmentation.");
}

std::vector<SegmentSnapshot> CachingAllocator::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<SegmentSnapshot> out;
  auto describe = [](Block* head, bool expandable) {
    SegmentSnapshot s{head->address(), 0, head->stream, head->pool->kind, expandable, {}};
    for (Block* b = head; b; b = b->next) {
      auto state = b->allocated         ? BlockSnapshot::State::Allocated
                   : b->event_count > 0 ? BlockSnapshot::State::PendingFree
                                        : BlockSnapshot::State::Free;
      s.blocks.push_back({b->address(), b->size, b->requested, state});
      s.size += b->size;
    }
    return s;
  };
  for (auto& [addr, head] : segments_) out.push_back(describe(head, false));
  for (auto& seg : expandables_) {
    Block* head = seg->last;
    while (head && head->prev) head = head->prev;
    if (head) out.push_back(describe(head, true));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.address < b.address; });
  return out;
}

}  // namespace memlens
