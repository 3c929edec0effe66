// churn: memory made afresh every step at one site, same size, and freed again, where one
// allocation would serve. Either a buffer (made empty or as a constant, then filled with
// the step's data): one preallocated buffer refilled in place would do. Or a constant: a
// value computed every step from inputs that do not change (a causal mask as
// tril(ones(T, T)), a position table from arange), whatever the line looks like: build it
// once. Values are followed op by op: each storage holds a fingerprint of what made it
// (the op, the fingerprints of its inputs and where it read them); a random draw, data
// written from outside the trace's view, or an input of unknown provenance is a value of
// its own, and what training writes (parameters, gradients, optimizer state) changes every
// step, so only what provably repeats is a constant. Sites that compute a varying value
// are left out (an op's output is the step's value, not a buffer to reuse), and so are
// sites that copy between devices or copy for layout (the transfer and contiguity reports
// speak of those, with advice of their own). Also temporaries: blocks freed within a few
// events of their allocation.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t mix(std::uint64_t h, const profiler::ShapeRecord& r) {
  h = mix(h, r.ndim);
  for (int i = 0; i < r.ndim; ++i) h = mix(h, static_cast<std::uint64_t>(r.dims[static_cast<std::size_t>(i)]));
  return h;
}

bool trained(Category c) { return c == Category::Parameter || c == Category::Gradient || c == Category::OptimizerState; }

// Ops that make a tensor of one value (PyTorch's and the runtime's names).
bool fills_a_buffer(std::string_view name) {
  for (std::string_view f :
       {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "scalar_tensor"})
    if (name == f) return true;
  return false;
}

// Ops whose output differs from call to call with the same inputs (PyTorch's and the
// runtime's names).
bool draws_at_random(std::string_view name) {
  for (std::string_view r : {"rand",           "randn",           "randint",       "randperm",     "rand_like",
                             "randn_like",     "randint_like",    "bernoulli",     "bernoulli_",   "normal",
                             "normal_",        "uniform_",        "random_",       "exponential_", "geometric_",
                             "cauchy_",        "log_normal_",     "multinomial",   "poisson",      "dropout",
                             "native_dropout", "feature_dropout", "alpha_dropout", "rrelu",        "rrelu_with_noise"})
    if (name == r) return true;
  return false;
}

class ChurnAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override {
    return kinds(EventKind::Op, EventKind::Copy, EventKind::Alloc, EventKind::FreeRequested);
  }
  void after(const Event& e, const PassState& s) override {
    switch (e.kind) {
      case EventKind::Op:
        return on_op(e.op, s);
      case EventKind::Copy: {
        // A copy that makes its own destination (a move between devices, contiguous,
        // clone, an index) is an op's output, which the step computes: no buffer to keep.
        // Only copy_ writes into a buffer the program allocated.
        if (e.device != e.copy.src_device || e.copy.reason != profiler::CopyReason::Copy) copy_sites_[s.site] = 1;
        const LiveBlock* dst = s.live.containing(e.device, e.copy.dst_address);
        if (!dst || !dst->storage) return;
        const LiveBlock* src = s.live.containing(e.copy.src_device, e.copy.src_address);
        std::uint64_t& v = value_[dst->storage];
        v = src && src->storage ? mix(mix(mix(mix(v, value_of(src->storage)), e.copy.dst_address - dst->address),
                                          e.copy.src_address - src->address),
                                      e.copy.bytes)
                                : fresh_value();
        return;
      }
      case EventKind::Alloc: {
        if (s.block && s.block->storage) value_[s.block->storage] = fresh_value();
        if (s.step == 0) return;  // set-up, before the first step boundary
        last_alloc_step_ = s.step;
        Repeat& r = repeats_[{s.site, e.alloc.size}];
        ++r.allocs;
        if (r.steps == 0 || r.last_step != s.step) {
          if (r.steps == 0) r.first_step = s.step, r.first_ns = s.since_start(e.time_ns);
          ++r.steps, r.last_step = s.step;
        }
        return;
      }
      case EventKind::FreeRequested: {
        const LiveBlock* b = s.block;
        if (!b) return;
        std::uint64_t value = 0;
        if (b->storage)
          if (auto it = value_.find(b->storage); it != value_.end()) value = it->second, value_.erase(it);
        // A block made and freed within one runtime call (one moment) is the library's own,
        // and so is what a backward pass or an optimizer step makes (autograd's gradient of a
        // mean is the same every step, and no program can build it once).
        const bool programs =
            b->category == Category::Input || b->category == Category::Activation || b->category == Category::Unknown;
        if (b->step > 0 && b->time_ns != e.time_ns)
          if (auto it = repeats_.find({b->site, b->size}); it != repeats_.end())
            it->second.freed_value(b->step, programs ? value : fresh_value());
        if (s.event_index - b->event_index <= s.options.temporary_window) {
          TemporarySite& t = temporaries_[b->site];
          t.site = b->site;
          ++t.count;
          t.bytes += b->size;
        }
        return;
      }
      default:
        return;
    }
  }

  void finish(const PassState& s, Report& r) override {
    ChurnSection& out = r.churn;
    out.window_events = s.options.temporary_window;
    // Every block allocated after step 0 was freed unless it is alive now: counting the
    // survivors here spares the pass a lookup per free.
    // Counted afresh each time: a followed recording's pass is reported again later.
    absl::flat_hash_map<std::pair<SiteId, std::uint64_t>, std::uint64_t> alive;
    s.live.for_each_block([&](const LiveBlock& b) {
      if (b.step > 0 && repeats_.contains({b.site, b.size})) ++alive[{b.site, b.size}];
    });
    for (auto& [k, v] : repeats_) {
      if (copy_sites_.get(k.first) || v.steps < 3) continue;
      const auto survivors = alive.find(k);
      const std::uint64_t freed = v.allocs - (survivors == alive.end() ? 0 : survivors->second);
      std::uint64_t possible = last_alloc_step_ - v.first_step + 1;  // steps since the site first allocated
      if (v.steps * 10 < possible * 9 || freed * 10 < v.allocs * 9) continue;
      const bool constant = v.close_constant() && k.second >= s.options.constant_floor;
      if (!constant && op_sites_.get(k.first)) continue;
      out.findings.push_back({k.first, k.second, v.allocs, v.steps, v.first_ns, constant});
    }
    std::sort(out.findings.begin(), out.findings.end(), [](const ChurnFinding& a, const ChurnFinding& b) {
      if (a.size * a.allocs != b.size * b.allocs) return a.size * a.allocs > b.size * b.allocs;
      return a.site != b.site ? a.site < b.site : a.size < b.size;
    });
    for (SiteId site = 0; site < temporaries_.size(); ++site) {
      const TemporarySite& t = temporaries_.at(site);
      if (t.count == 0) continue;
      out.temporaries.push_back(t);
      out.temporary_count += t.count;
      out.temporary_bytes += t.bytes;
    }
    std::stable_sort(out.temporaries.begin(), out.temporaries.end(), [](const TemporarySite& a, const TemporarySite& b) {
      return a.count != b.count ? a.count > b.count : a.site < b.site;
    });
    if (out.temporaries.size() > s.options.top_sites) out.temporaries.resize(s.options.top_sites);
  }

 private:
  struct Repeat {
    std::uint64_t allocs = 0, steps = 0, first_step = 0, last_step = 0, first_ns = 0;
    // The values freed, summed per step they were made in (a step's blocks may be freed in
    // the next: a mask replaced by the next step's): the same sum step after step is the
    // same tensors made again. The last few steps stay open for late frees.
    static constexpr std::size_t kOpenSteps = 4;
    std::map<std::uint64_t, std::uint64_t> open;  // made in step -> sum so far
    std::uint64_t last_sum = 0, last_closed = 0, closed = 0;
    bool varies = false;
    void freed_value(std::uint64_t made_in, std::uint64_t value) {
      if (closed && made_in <= last_closed) varies = true;  // later than the window: no claim
      open[made_in] += value;
      while (open.size() > kOpenSteps) close_oldest();
    }
    void close_oldest() {
      auto it = open.begin();
      if (closed++ && it->second != last_sum) varies = true;
      last_sum = it->second, last_closed = it->first;
      open.erase(it);
    }
    // Whether every step freed the same values (three steps at least). The last step is
    // left out: the run may end before it frees what it made.
    bool close_constant() {
      while (open.size() > 1) close_oldest();
      return !varies && closed >= 3;
    }
  };
  void on_op(const profiler::OpEvent& op, const PassState& s) {
    auto [named, fresh] = random_names_.try_emplace(op.name, false);
    if (fresh) named->second = draws_at_random(s.trace.string(op.name));
    // An op's output is the step's value, unless the op only fills what it makes (zeros,
    // ones, full: a buffer may be made so).
    auto [fill, seen] = fill_names_.try_emplace(op.name, false);
    if (seen) fill->second = fills_a_buffer(s.trace.string(op.name));
    if (!fill->second) op_sites_[s.site] = 1;
    if (!op.output.storage) return;
    std::uint64_t v = 0;
    if (named->second) {
      v = fresh_value();
    } else {
      v = mix(mix(mix(mix(op.name, op.output.sizes), op.output.strides), static_cast<std::uint64_t>(op.output.dtype)),
              static_cast<std::uint64_t>(op.output.offset));
      for (std::size_t i = 0; i < op.n_inputs && i < op.inputs.size(); ++i) {
        const profiler::TensorRecord& in = op.inputs[i];
        v = mix(mix(mix(mix(v, in.storage ? value_of(in.storage) : fresh_value()), in.sizes), in.strides),
                static_cast<std::uint64_t>(in.offset) ^ static_cast<std::uint64_t>(in.dtype) << 56);
        // What training writes (an optimizer's update, often by kernels the trace does not
        // see as ops) is taken to change every step.
        if (const LiveBlock* b = in.storage ? s.live.block_of(in.storage) : nullptr; b && trained(b->category))
          v = mix(v, s.step);
      }
    }
    value_[op.output.storage] = v;
  }
  std::uint64_t fresh_value() { return mix(0x6d656d6c656e73ull, ++fresh_); }
  // A storage the pass has not seen made (before the trace, or outside it) is a value of
  // its own.
  std::uint64_t value_of(std::uint64_t storage) {
    auto [it, added] = value_.try_emplace(storage, 0);
    if (added) it->second = fresh_value();
    return it->second;
  }

  std::uint64_t last_alloc_step_ = 0;                        // the last step that allocated anything
  PerSite<std::uint8_t> op_sites_;                           // sites that compute values
  PerSite<std::uint8_t> copy_sites_;                         // sites that copy between devices or for layout
  absl::flat_hash_map<std::uint64_t, std::uint64_t> value_;  // live storage -> fingerprint of its value
  absl::flat_hash_map<std::uint32_t, bool> random_names_;    // op name -> draws at random
  absl::flat_hash_map<std::uint32_t, bool> fill_names_;      // op name -> fills a buffer
  std::uint64_t fresh_ = 0;
  absl::flat_hash_map<std::pair<SiteId, std::uint64_t>, Repeat> repeats_;  // site, size
  PerSite<TemporarySite> temporaries_;
};

}  // namespace

std::unique_ptr<Analysis> make_churn_analysis() { return std::make_unique<ChurnAnalysis>(); }

}  // namespace memlens::analysis
