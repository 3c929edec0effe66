#include "live_memory.hpp"

#include <algorithm>
#include <array>

namespace memlens::analysis {

using profiler::EventKind;

namespace {
using profiler::ViewKind;
bool reorders(ViewKind k) {
  return k != ViewKind::View && k != ViewKind::Reshape && k != ViewKind::Detach && k != ViewKind::Squeeze &&
         k != ViewKind::Unsqueeze;
}
}  // namespace

std::string ViewChain::text() const {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += (i ? " -> " : "") + std::string(profiler::view_kind_name(kinds[i]));
  return out;
}

void LiveMemory::account(const LiveBlock& b, std::int64_t sign) {
  DeviceState& d = devices_[b.device];
  auto delta = static_cast<std::uint64_t>(sign) * b.size;  // wraps for sign -1, as intended
  d.allocated += delta;
  const std::size_t c = static_cast<std::size_t>(b.category) % kCategoryCount;
  d.by_category[c] += delta;
  d.by_site[b.site] += delta;
  DeviceState::Held& h = d.by_site_category[b.site][c];
  h.bytes += delta;
  h.blocks += static_cast<std::uint64_t>(sign);
  if (b.stack) {
    StackBytes& st = d.by_stack[b.stack];
    st.stack = b.stack, st.site = b.site;
    st.bytes += delta;
    st.blocks += static_cast<std::uint64_t>(sign);
    if (st.blocks == 0) d.by_stack.erase(b.stack);
  }
  if (b.step > 0) stepped_by_site_[b.site] += delta;
}

const LiveBlock* LiveMemory::apply(const profiler::Event& e, SiteId site, std::uint64_t event_index, std::uint64_t step) {
  if (e.device >= devices_.size()) devices_.resize(e.device + 1u);
  DeviceState& d = devices_[e.device];
  switch (e.kind) {
    case EventKind::SegmentAlloc:
      d.touched = true;
      if (d.segments.insert_or_assign(e.segment.address, e.segment.size).second) d.reserved += e.segment.size;
      return nullptr;
    case EventKind::SegmentFree: {
      auto it = d.segments.find(e.segment.address);
      if (it != d.segments.end()) {
        d.reserved -= it->second;
        d.segments.erase(it);
      }
      return nullptr;
    }
    case EventKind::Alloc: {
      const profiler::AllocEvent& a = e.alloc;
      d.touched = true;
      if (auto old = d.blocks.find(a.address); old != d.blocks.end()) {  // a free the trace lost
        account(old->second, -1);
        if (old->second.storage) storage_.erase(old->second.storage), views_.erase(old->second.storage);
        d.blocks.erase(old);
      }
      LiveBlock b;
      b.address = a.address, b.size = a.size, b.requested = a.requested, b.segment = a.segment;
      b.storage = a.storage, b.time_ns = e.time_ns, b.event_index = event_index, b.step = step;
      b.site = site, b.stack = a.stack, b.device = e.device, b.stream = a.stream, b.category = a.category;
      account(b, +1);
      if (b.storage) storage_[b.storage] = {e.device, a.address};
      if (b.storage && b.category == Category::Unknown) {
        if (born_unnamed_.size() == kBornKept) born_unnamed_.erase(born_unnamed_.begin());
        born_unnamed_.push_back({e.thread, b.storage});
      }
      return &d.blocks.insert_or_assign(a.address, b).first->second;
    }
    case EventKind::FreeRequested: {
      auto it = d.blocks.find(e.free.address);
      if (it == d.blocks.end()) return nullptr;  // allocated before a snapshot could see it
      removed_ = it->second;
      account(removed_, -1);
      if (removed_.storage) storage_.erase(removed_.storage), views_.erase(removed_.storage);
      d.blocks.erase(it);
      return &removed_;
    }
    case EventKind::View: {
      ViewKind kind = e.view.view;
      if (!e.view.storage || !reorders(kind)) return nullptr;
      // Each kind once, in the order first seen: a loop that transposes the same storage
      // every step has a "transpose" chain, not one link per step.
      ViewChain& c = views_[e.view.storage];
      if (!c.has(kind) && c.n < c.kinds.size()) c.kinds[c.n++] = kind;
      return nullptr;
    }
    case EventKind::Category: {
      LiveBlock* b = block_of(e.category.storage);
      if (b) set_category(*b, e.category.category, false);
      return b;
    }
    case EventKind::Op: {
      std::array<std::uint64_t, profiler::OpEvent::kMaxInputs> inputs{};
      const std::size_t n = std::min<std::size_t>(e.op.n_inputs, inputs.size());
      for (std::size_t i = 0; i < n; ++i) inputs[i] = e.op.inputs[i].storage;
      const LiveBlock* named = infer_category(e.op.output.storage, inputs.data(), n);
      // What the op made besides its output (a second output, as max's indices; its own
      // scratch) is born since its thread's previous op and named as the output is.
      const LiveBlock* out = block_of(e.op.output.storage);
      std::erase_if(born_unnamed_, [&](const std::pair<std::uint32_t, std::uint64_t>& b) {
        if (b.first != e.thread) return false;
        if (LiveBlock* other = block_of(b.second); out && other && other->category == Category::Unknown)
          set_category(*other, out->category, true);
        return true;
      });
      return named;
    }
    case EventKind::Copy: {
      const LiveBlock* dst = containing(e.device, e.copy.dst_address);
      const LiveBlock* src = containing(e.copy.src_device, e.copy.src_address);
      const std::uint64_t from = src ? src->storage : 0;
      return dst && dst->storage ? infer_category(dst->storage, &from, src ? 1 : 0) : nullptr;
    }
    default:
      return nullptr;
  }
}

const LiveBlock* LiveMemory::block_of(std::uint64_t storage) const {
  auto s = storage ? storage_.find(storage) : storage_.end();
  if (s == storage_.end()) return nullptr;
  auto it = devices_[s->second.first].blocks.find(s->second.second);
  return it == devices_[s->second.first].blocks.end() || it->second.storage != storage ? nullptr : &it->second;
}

void LiveMemory::set_category(LiveBlock& b, Category c, bool inferred) {
  account(b, -1);
  b.category = c, b.inferred = inferred;
  account(b, +1);
}

namespace {

// What a value computed from an input of role `in` makes of `made` so far (see infer_category).
Category computed_from(Category made, Category in) {
  switch (in) {
    case Category::Gradient:
    case Category::OptimizerState:
    case Category::AutogradDetail:
    case Category::Temporary:
      return Category::Temporary;
    case Category::Parameter:
    case Category::Activation:
      return made == Category::Input ? Category::Activation : made;
    case Category::Unknown:
    case Category::Input:
    case Category::BeforeRecording:
      break;
  }
  return made;
}

}  // namespace

// Storages nothing has named a role for take one from the ops. Data an op reads that
// nothing computed (a buffer the program filled, a factory's constant) is an input. An op's
// output takes its role from what the op computed from: work on gradients, optimizer state
// or temporaries is a temporary (a backward pass, an optimizer step); a value computed from
// parameters or activations is an activation (a model's forward, with or without autograd
// keeping it); the rest (a random draw, arithmetic on data the program made: a data set, a
// mask) is an input. A copy that makes its destination (a cast, a clone, a move) is an op
// of one input. The last op to write a storage names it (a reduction casts its sum into its
// output before its own event), and a role named by an event (a parameter made this way,
// an activation saved for backward) replaces these.
const LiveBlock* LiveMemory::infer_category(std::uint64_t output, const std::uint64_t* inputs, std::size_t n) {
  LiveBlock* out = block_of(output);
  Category made = Category::Input;
  for (std::size_t i = 0; i < n; ++i) {
    LiveBlock* in = inputs[i] == output ? nullptr : block_of(inputs[i]);
    if (!in) continue;
    if (in->category == Category::Unknown) set_category(*in, Category::Input, true);
    made = computed_from(made, in->category);
  }
  if (!out || (out->category != Category::Unknown && !out->inferred)) return nullptr;
  set_category(*out, made, true);
  return out;
}

const LiveBlock* LiveMemory::containing(std::uint8_t d, std::uint64_t address) const {
  if (d >= devices_.size()) return nullptr;
  const auto& blocks = devices_[d].blocks;
  auto it = blocks.upper_bound(address);
  if (it == blocks.begin()) return nullptr;
  --it;
  return address < it->second.address + it->second.size ? &it->second : nullptr;
}

const LiveBlock* LiveMemory::expanded_source(const profiler::CopyEvent& c) const {
  const LiveBlock* src = containing(c.src_device, c.src_address);
  if (!src || c.bytes <= src->size || !src->storage) return nullptr;
  const ViewChain* v = views(src->storage);
  return v && v->has(ViewKind::Expand) ? src : nullptr;
}

std::uint64_t LiveMemory::largest_free_block(std::uint8_t d) const {
  if (d >= devices_.size()) return 0;
  const DeviceState& s = devices_[d];
  std::uint64_t largest = 0;
  for (auto [seg, size] : s.segments) {
    std::uint64_t at = seg, end = seg + size;
    for (auto it = s.blocks.lower_bound(seg); it != s.blocks.end() && it->first < end; ++it) {
      largest = std::max(largest, it->first - std::min(it->first, at));
      at = std::max(at, it->first + it->second.size);
    }
    largest = std::max(largest, end - std::min(end, at));
  }
  return largest;
}

LiveAt LiveMemory::live_at(std::uint8_t d, std::uint64_t time_ns, std::size_t top) const {
  LiveAt at;
  at.time_ns = time_ns;
  if (d >= devices_.size()) return at;
  const DeviceState& s = devices_[d];
  at.allocated = s.allocated;
  at.reserved = s.reserved;
  at.largest_free_block = largest_free_block(d);
  std::array<CategoryBytes, kCategoryCount> cats{};
  for (SiteId site = 0; site < s.by_site_category.size(); ++site) {
    SiteBytes sb{site, 0, 0};
    const auto& held = s.by_site_category.at(site);
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
      const DeviceState::Held& h = held[c];
      cats[c].category = static_cast<Category>(c);
      cats[c].bytes += h.bytes;
      cats[c].blocks += h.blocks;
      sb.bytes += h.bytes;
      sb.blocks += h.blocks;
    }
    if (sb.blocks) at.by_site.push_back(sb);
  }
  for (auto& c : cats)
    if (c.blocks) at.by_category.push_back(c);
  std::sort(at.by_category.begin(), at.by_category.end(), [](const CategoryBytes& a, const CategoryBytes& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.category < b.category;
  });
  std::sort(at.by_site.begin(), at.by_site.end(),
            [](const SiteBytes& a, const SiteBytes& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.site < b.site; });
  if (at.by_site.size() > top) at.by_site.resize(top);
  for (const auto& [id, st] : s.by_stack) at.by_stack.push_back(st);
  std::sort(at.by_stack.begin(), at.by_stack.end(),
            [](const StackBytes& a, const StackBytes& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack; });
  if (at.by_stack.size() > top) at.by_stack.resize(top);
  return at;
}

}  // namespace memlens::analysis
