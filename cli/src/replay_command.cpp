// memlens replay: an input's allocation requests (or a replay script's) through memlens'
// caching allocator with another configuration: "would this setting have saved my run?"
#include <sstream>
#include <optional>

#include "command.hpp"
#include "exit_codes.hpp"
#include "flag_values.hpp"
#include "memlens/allocator/allocator_config.hpp"
#include "memlens/allocator/request_replay.hpp"
#include "memlens/analysis/report.hpp"
#include "memlens/analysis/trace_requests.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using analysis::bytes_text;

// "change: peak reserved 56.91 GiB -> 51.69 GiB (-5.22 GiB), OOMs 0 -> 0"
std::string replay_change(const ReplayResult& before, const ReplayResult& after) {
  auto signed_bytes = [](std::int64_t d) { return (d < 0 ? "-" : "+") + bytes_text(static_cast<std::uint64_t>(d < 0 ? -d : d)); };
  std::string out = "change: peak reserved " + bytes_text(static_cast<std::uint64_t>(before.peak_reserved)) + " -> " +
                    bytes_text(static_cast<std::uint64_t>(after.peak_reserved)) + " (" +
                    signed_bytes(after.peak_reserved - before.peak_reserved) + "), OOMs " + std::to_string(before.ooms.size()) +
                    " -> " + std::to_string(after.ooms.size());
  if (!before.ooms.empty())
    out += after.ooms.empty()                       ? ": this setting would have avoided every recorded OOM"
           : after.ooms.size() < before.ooms.size() ? ": fewer, not all, avoided"
                                                    : "";
  return out + "\n";
}

AllocatorConfig parse_config(const std::string& text) {
  try {
    return AllocatorConfig::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--alloc-conf: ") + e.what());
  }
}

class ReplayCommand final : public Command {
 public:
  explicit ReplayCommand(CLI::App& parent)
      : Command(parent.add_subcommand("replay", "run a trace's allocations through another allocator configuration")) {
    app_->add_option("FILE", file_, "a trace, or a replay script (\"alloc ID BYTES\" / \"free ID\" lines)")
        ->required()
        ->check(CLI::ExistingFile);
    app_->add_option("--alloc-conf", conf_, "PYTORCH_CUDA_ALLOC_CONF-style settings, e.g. expandable_segments:True");
    app_->add_option("--device", device_, "the trace's device to replay (default: the first accelerator)");
    app_->add_option("--capacity", capacity_, "device size (default: the traced device's, else 16GiB)");
  }

  int run() override {
    ReplayOptions o;
    if (!conf_.empty()) o.config = parse_config(conf_);
    std::optional<std::uint64_t> capacity;
    if (app_->count("--capacity")) capacity = byte_flag("--capacity", capacity_, kMinReplayCapacity);
    std::vector<ReplayRequest> requests;
    std::optional<ReplayOptions> run_options;  // the trace's own, to compare with
    std::string text;
    input::InputFile in = open_file(file_);
    if (in.format() != input::InputFormat::Other) {
      auto reader = open_trace(std::move(in));
      // The run's own configuration, with --alloc-conf's settings over it.
      o.config = parse_config(reader->header().allocator_config + "," + conf_);
      std::string chosen;
      try {
        requests = analysis::replay_requests(*reader, device_, &chosen);
      } catch (const std::exception& e) {
        throw UsageError(file_ + ": " + e.what());
      }
      bool known_capacity = false;
      for (const auto& d : reader->header().devices)
        if (d.name == chosen && d.capacity) o.capacity = d.capacity, known_capacity = true;
      text = "replaying " + std::to_string(requests.size()) + " requests of " +
             (chosen.empty() ? std::string("no device") : chosen) + " from " + file_ + "\n";
      if (!known_capacity && !capacity) {
        // A PyTorch snapshot does not say how large its device was.
        o.capacity = kUnknownCapacity;
        text += "the trace does not give the device's size: replayed on a 1.00 TiB device (--capacity sets one)\n";
      }
      if (!conf_.empty()) {
        // What the setting changes: the run's own configuration first, then with it.
        ReplayOptions own = o;
        own.config = parse_config(reader->header().allocator_config);
        if (capacity) own.capacity = *capacity;
        run_options = own;
      }
    } else {
      // Neither a trace nor a snapshot: a replay script.
      std::istringstream script{std::string(in.bytes())};
      try {
        requests = parse_replay(script, file_);
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
    }
    if (capacity) o.capacity = *capacity;
    ReplayResult result = replay(requests, o);
    if (run_options) {
      ReplayResult own = replay(requests, *run_options);
      text += "as recorded:\n" + format_replay(own, *run_options) + "with --alloc-conf " + conf_ + ":\n" +
              format_replay(result, o) + replay_change(own, result);
    } else {
      text += format_replay(result, o);
    }
    std::fputs(text.c_str(), stdout);
    return kOk;
  }

 private:
  std::string file_, conf_, device_, capacity_;
};

}  // namespace

void add_replay_command(CLI::App& app, Commands& out) { out.push_back(std::make_unique<ReplayCommand>(app)); }

}  // namespace memlens::cli
