// The rules that name an imported block, each from what the file shows, never a guess:
//  1. Born inside an optimizer step (an `Optimizer.step#...` annotation) and alive after it
//     ends: optimizer state (Adam's moments). Born and freed inside it: a temporary.
//  2. Born by the autograd engine (a frame of torch::autograd::Engine, or of autograd's
//     Python entry points) and alive after that backward pass ends: a gradient (what
//     backward leaves behind is the .grad). Freed within a few entries of its birth: a
//     temporary of a backward node. Freed later inside the pass: autograd detail (a
//     gradient in flight between nodes).
//  3. Born outside backward and freed by the autograd engine: an activation (a forward
//     value kept for backward, released by the node that used it).
//  4. Freed within a few entries of its birth: a temporary.
// Anything else stays unknown. A backward pass is a run of entries whose stacks show the
// engine, ended by an allocation that does not (the next forward) or by an annotation.
#include "snapshot_categories.hpp"

#include <absl/container/flat_hash_map.h>

#include <string_view>
#include <unordered_map>
#include <utility>

#include "frame_site.hpp"

namespace memlens::snapshot {

namespace {

using Kind = PyValue::Kind;

constexpr std::size_t kTemporaryEntries = 16;  // the analyses' temporary window, in entries
constexpr std::size_t kNone = static_cast<std::size_t>(-1);

class Categorizer {
 public:
  explicit Categorizer(const SnapshotRun& run) : run_(run), n_(run.entries.size()) {}

  std::vector<Category> categories() && {
    find_phases();
    std::vector<Category> out(n_, Category::Unknown);
    for (std::size_t i = 0; i < n_; ++i)
      if (run_.entries[i].action == Action::Alloc) out[i] = category(i, death_[i]);
    return out;
  }

 private:
  // Each entry's backward pass (its end, kNone outside one), each allocation's death (its
  // free's entry, kNone when alive at the end), each entry's optimizer step (its end).
  void find_phases() {
    engine_.assign(n_, false);
    pass_end_.assign(n_, kNone);
    step_end_.assign(n_, kNone);
    death_.assign(n_, kNone);
    absl::flat_hash_map<std::pair<std::uint8_t, std::uint64_t>, std::size_t> born;  // device, address -> its Alloc entry
    std::size_t pass_start = kNone, step_start = kNone;
    auto end_pass = [&](std::size_t last) {
      if (pass_start == kNone) return;
      for (std::size_t j = pass_start; j <= last; ++j) pass_end_[j] = last;
      pass_start = kNone;
    };
    std::size_t last_engine = kNone;
    for (std::size_t i = 0; i < n_; ++i) {
      const Entry& e = run_.entries[i];
      engine_[i] = by_autograd(e.frames);
      if (engine_[i]) {
        if (pass_start == kNone) pass_start = i;
        last_engine = i;
      } else if ((e.action == Action::Alloc || e.action == Action::Begin || e.action == Action::End) && pass_start != kNone) {
        end_pass(last_engine);
      }
      const bool step = (e.action == Action::Begin || e.action == Action::End) &&
                        std::string_view(run_.names[e.extra]).starts_with("Optimizer.step");
      if (step && e.action == Action::Begin) step_start = i;
      if (step && e.action == Action::End && step_start != kNone) {
        for (std::size_t j = step_start; j <= i; ++j) step_end_[j] = i;
        step_start = kNone;
      }
      const std::pair<std::uint8_t, std::uint64_t> key{e.device, e.addr};
      if (e.action == Action::Alloc) born[key] = i;
      if (e.action == Action::FreeRequested)
        if (auto it = born.find(key); it != born.end()) death_[it->second] = i, born.erase(it);
    }
    end_pass(last_engine);
    if (step_start != kNone)  // a step the file ends inside
      for (std::size_t j = step_start; j < n_; ++j) step_end_[j] = n_;
  }

  Category category(std::size_t birth, std::size_t death) const {
    const bool dies = death != kNone;
    if (step_end_[birth] != kNone)  // rule 1
      return dies && death <= step_end_[birth] ? Category::Temporary : Category::OptimizerState;
    if (engine_[birth]) {  // rule 2
      if (!dies || pass_end_[birth] == kNone || death > pass_end_[birth]) return Category::Gradient;
      return death - birth <= kTemporaryEntries ? Category::Temporary : Category::AutogradDetail;
    }
    if (dies && engine_[death]) return Category::Activation;                     // rule 3
    if (dies && death - birth <= kTemporaryEntries) return Category::Temporary;  // rule 4
    return Category::Unknown;
  }

  // Whether a stack shows the autograd engine at work: its C++ frames, or its Python entry
  // points where the file kept Python frames only.
  bool by_autograd(const PyValue* frames) {
    if (!frames || !frames->is(Kind::List)) return false;
    auto [it, fresh] = stacks_.try_emplace(frames, false);
    if (!fresh) return it->second;
    for (const PyValue* f : frames->items()) {
      const PyValue* name = f->is(Kind::Dict) ? f->get("name") : nullptr;
      const PyValue* file = f->is(Kind::Dict) ? f->get("filename") : nullptr;
      if (!name || !name->is(Kind::String)) continue;
      const std::string_view n = name->text();
      const std::string_view path = file && file->is(Kind::String) ? std::string_view(file->text()) : "";
      if (n.find("torch::autograd::Engine::") != std::string_view::npos ||
          (path.ends_with("torch/autograd/__init__.py") && (n == "backward" || n == "grad")) || n == "_engine_run_backward")
        return it->second = true;
    }
    return false;
  }

  const SnapshotRun& run_;
  const std::size_t n_;
  std::vector<bool> engine_;
  std::vector<std::size_t> pass_end_, step_end_, death_;
  std::unordered_map<const PyValue*, bool> stacks_;
};

}  // namespace

std::vector<Category> block_categories(const SnapshotRun& run) { return Categorizer(run).categories(); }

}  // namespace memlens::snapshot
