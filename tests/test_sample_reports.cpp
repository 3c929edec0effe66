// One end-to-end test per sample: `memlens record` runs it, `memlens report` must say
// what the sample shows (finding kinds, sites by file:line, shapes, bytes), and each
// corrected twin must produce no finding at all.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "memlens_cli.hpp"

using namespace memlens::test;

namespace {

std::string sample(const char* name) { return std::string(SAMPLES_DIR) + "/" + name; }

nlohmann::json report_of(const char* name, const std::string& args = "") {
  return report_json(recorded(std::string(name) + args, sample(name), args));
}

bool at_line(const nlohmann::json& site, const std::string& file_line) {
  return site.is_string() && site.get<std::string>().ends_with("samples/" + file_line);
}

// The finding kinds, in order; every finding must also say what to do and what it saves.
std::vector<std::string> kinds(const nlohmann::json& t) {
  std::vector<std::string> out;
  for (const auto& f : t["findings"]) {
    out.push_back(f["kind"]);
    INFO(f.dump());
    CHECK_FALSE(f["advice"].get<std::string>().empty());
    CHECK(f["advice"].get<std::string>().find('\n') == std::string::npos);
    CHECK(f["saves"].get<std::uint64_t>() > 0);
  }
  return out;
}

// "file:line" of the first line of a sample's source holding `marker`.
std::string line_of(const std::string& file, const std::string& marker) {
  std::ifstream in(std::string(SAMPLES_SOURCE_DIR) + "/" + file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return file + ":" + std::to_string(n);
  FAIL("no line of " << file << " holds " << marker);
  return "";
}

const nlohmann::json& sim(const nlohmann::json& t) {
  for (const auto& d : t["devices"])
    if (d["name"] == "sim:0") return d;
  FAIL("no sim:0 device in the report");
  return t;
}

}  // namespace

TEST_CASE("mlp_classifier: a loss over many classes raises no finding (the library builds no one-hot)", "[samples]") {
  // 64 x 100 classes: a one-hot of the targets would be 6,400 elements from a 64-element
  // input, a broadcast finding at the user's loss line for what the library did.
  auto r = report_of("mlp_classifier", "--batch 64 --classes 100 --steps 3");
  CHECK(r["findings"].empty());
  CHECK(r["broadcast"]["findings"].empty());
}

TEST_CASE("mlp_classifier: the peak follows the micro-batch, not the effective batch", "[samples]") {
  auto big = report_of("mlp_classifier", "--batch 256 --accumulate 1");
  auto micro = report_of("mlp_classifier", "--batch 64 --accumulate 4");
  auto small = report_of("mlp_classifier", "--batch 64 --accumulate 1");
  std::uint64_t p256 = sim(big)["peak_allocated"]["allocated"], p64x4 = sim(micro)["peak_allocated"]["allocated"],
                p64 = sim(small)["peak_allocated"]["allocated"];
  CHECK(p64x4 * 2 < p256);        // the same update, under half the peak
  CHECK(p64x4 < p64 + p64 / 10);  // about the micro-batch's own peak
  CHECK(big["steps"] == 20);
  CHECK(big["findings"].empty());
  CHECK(micro["findings"].empty());
  // Activations saved for backward are named at the peak.
  bool activations = false;
  for (const auto& c : sim(big)["peak_allocated"]["by_category"]) activations |= c["category"] == "activation";
  CHECK(activations);
}

TEST_CASE("mlp_classifier: backward's memory is named - gradients in flight - never unknown", "[samples]") {
  // Batch 256 of a 4096 x 32 dataset, 32 -> 1024 -> 4. At the peak (inside
  // loss.backward()) the live memory is the dataset moved to the device, the activations
  // saved for backward, the parameters, SGD's momentum and the gradients in flight between
  // backward nodes, which PyTorch's memory timeline calls AUTOGRAD_DETAIL. None of it is
  // left unknown.
  auto t = report_of("mlp_classifier", "--batch 256 --steps 3");
  const auto& peak = sim(t)["peak_allocated"];
  std::map<std::string, std::uint64_t> bytes;
  for (const auto& c : peak["by_category"]) bytes[c["category"]] = c["bytes"];
  std::uint64_t total = peak["allocated"];
  CHECK(bytes["unknown"] * 100 < total);
  CHECK(bytes["autograd_detail"] > 0);
  CHECK(bytes["activation"] >= 256 * 1024 * 4);       // the hidden layer's relu output, at least
  CHECK(bytes["input"] == 4096 * 32 * 4 + 4096 * 8);  // features (float) and labels (int64)
  // ReLU's backward is one fused pass (no mask and cast tensors between): the peak stays
  // under 4 MiB (it was 5.09 MiB with them).
  CHECK(total < 4u << 20);
}

TEST_CASE("leak_loss_history: growth at the line that keeps the graph; the twin is clean", "[samples]") {
  auto t = report_of("leak_loss_history", "12");
  REQUIRE(t["leaks"]["growth"].size() == 1);
  const auto& g = t["leaks"]["growth"][0];
  CHECK(at_line(g["site"], "leak_loss_history.cpp:41"));
  CHECK(g["steps_observed"] == 11);
  CHECK(g["bytes_per_step"] == 257.5 * 1024);
  CHECK(kinds(t) == std::vector<std::string>{"growth"});
  // Keeping a number instead of the graph saves what grew: 9 steps of 257.5 KiB after the first.
  CHECK(t["findings"][0]["saves"] == 9 * 257.5 * 1024);
  CHECK(t["findings"][0]["advice"].get<std::string>().find(".item()") != std::string::npos);
  CHECK(report_of("leak_loss_history", "12 --fixed")["findings"].empty());
}

TEST_CASE("transfer_in_loop: transfers per step and the resent data; moved once is clean", "[samples]") {
  auto t = report_of("transfer_in_loop", "3");
  const auto& tr = t["transfers"];
  CHECK(tr["count"] == 3 * 8 * 2 + 2);  // two per step, and the model moved once
  CHECK(tr["per_step"].size() == 24);
  CHECK(tr["per_step"][1]["bytes"] == 256 * 64 * 4 + 256 * 4);
  REQUIRE(tr["resent"].size() == 2);
  CHECK(at_line(tr["resent"][0]["site"], "transfer_in_loop.cpp:36"));
  CHECK(tr["resent"][0]["bytes"] == 256 * 64 * 4);
  CHECK(tr["resent"][0]["sources"] == 8);
  CHECK(tr["resent"][0]["steps"] == 3);
  CHECK(kinds(t) == std::vector<std::string>{"resent_transfer", "resent_transfer"});
  // Moving the 8 batches once instead of in each of 3 steps saves 16 sends of 64 KiB.
  CHECK(t["findings"][0]["saves"] == 16 * 256 * 64 * 4);
  auto once = report_of("transfer_in_loop", "3 --fixed");
  CHECK(once["findings"].empty());
  CHECK(once["transfers"]["count"] == 4);  // the data set and the model, once
}

TEST_CASE("buffer_reuse: a fresh buffer every step is churn; copy_ into one is not", "[samples]") {
  auto t = report_of("buffer_reuse", "16");
  REQUIRE(t["churn"]["findings"].size() == 1);
  const auto& c = t["churn"]["findings"][0];
  CHECK(at_line(c["site"], "buffer_reuse.cpp:25"));
  CHECK(c["size"] == 128 * 256 * 4);
  CHECK(c["steps"] == 15);  // every step after the first boundary
  CHECK(kinds(t) == std::vector<std::string>{"churn"});
  CHECK(t["findings"][0]["saves"] == 14 * 128 * 256 * 4);  // one buffer instead of 15
  CHECK(report_of("buffer_reuse", "16 --fixed")["findings"].empty());
}

TEST_CASE("contiguity: the copies reshape and contiguous make after a transpose", "[samples]") {
  auto t = report_of("contiguity", "8");
  const auto& copies = t["contiguity"]["copies"];
  REQUIRE(copies.size() == 2);
  for (const auto& c : copies) {
    CHECK(c["count"] == 8);
    CHECK(c["bytes"] == 8 * 512 * 256 * 4);
    CHECK(c["view_chain"] == "transpose");
  }
  CHECK(((at_line(copies[0]["site"], "contiguity.cpp:30") && copies[0]["reason"] == "reshape") ||
         (at_line(copies[1]["site"], "contiguity.cpp:30") && copies[1]["reason"] == "reshape")));
  CHECK(kinds(t) == std::vector<std::string>{"layout_copy", "layout_copy"});
  CHECK(t["findings"][0]["saves"] == 7 * 512 * 256 * 4);  // one copy instead of 8
  CHECK(report_of("contiguity", "8 --fixed")["findings"].empty());
}

TEST_CASE("broadcast_truth: claim 6 is false (one 4 MB output), pairwise differences are flagged", "[samples]") {
  auto t = report_of("broadcast_truth");
  // x + y: the only allocation at its line is the output, 1000 x 1000 floats.
  std::uint64_t blocks = 0, bytes = 0;
  for (const auto& s : t["allocations_by_site"])
    if (at_line(s["site"], "broadcast_truth.cpp:23")) blocks = s["blocks"], bytes = s["bytes"];
  CHECK(blocks == 1);
  CHECK(bytes >= 4000000);
  CHECK(bytes < 4000000 + 4096);
  REQUIRE(t["broadcast"]["findings"].size() == 1);
  const auto& f = t["broadcast"]["findings"][0];
  CHECK(at_line(f["site"], "broadcast_truth.cpp:32"));
  CHECK(f["inputs"] == nlohmann::json::parse("[[256, 1, 32], [1, 128, 32]]"));
  CHECK(f["output"] == nlohmann::json::parse("[256, 128, 32]"));
  CHECK(f["factor"] == 128.0);
  CHECK(kinds(t) == std::vector<std::string>{"broadcast"});
  CHECK(report_of("broadcast_truth", "--fixed")["findings"].empty());
}

TEST_CASE("inplace_autograd: both errors caught and printed, no finding", "[samples]") {
  Run r = run("record -o " + quote(temp("inplace.memtrace")) + " -- " + quote(sample("inplace_autograd")));
  CHECK(r.status == 0);
  CHECK(r.out.find("inplace_autograd: y = x[0]; y += 1 -> a view of a leaf Variable that requires grad is being used in "
                   "an in-place operation.") != std::string::npos);
  CHECK(r.out.find("saved by SigmoidBackward0, is at version 1; expected version 0 instead.") != std::string::npos);
  CHECK(report_json(temp("inplace.memtrace"))["findings"].empty());
}

TEST_CASE("oom_recovery: the OOM message speaks of fragmentation; expandable segments would fit", "[samples]") {
  std::string trace = recorded("oom", sample("oom_recovery"), "");
  auto t = report_json(trace);
  REQUIRE(t["fragmentation"]["ooms"].size() == 2);
  const auto& o = t["fragmentation"]["ooms"][1];
  CHECK(at_line(o["site"], "oom_recovery.cpp:31"));
  CHECK(o["requested"] == 64 << 20);
  CHECK(o["largest_free_block"] == 14 << 20);  // 20 MiB segments holding one 6 MiB tensor
  CHECK(kinds(t) == std::vector<std::string>{"oom", "oom"});
  // The explanation: cached but unallocated, what held the device, and replay's verdicts.
  CHECK(o["reserved_unallocated"] == o["reserved"].get<std::uint64_t>() - o["allocated"].get<std::uint64_t>());
  REQUIRE(o["holding"]["by_site"].size() == 1);  // every held tensor comes from the fill loop
  CHECK(at_line(o["holding"]["by_site"][0]["site"], "oom_recovery.cpp:21"));
  CHECK(o["holding"]["by_site"][0]["bytes"] == o["allocated"]);
  CHECK(o["replay_capacity"] == t["devices"][0]["capacity"]);
  REQUIRE(o["replay"].size() == 4);
  CHECK(o["replay"][0] == nlohmann::json{{"config", "as recorded"}, {"fits", false}});
  CHECK(o["replay"][1] == nlohmann::json{{"config", "expandable_segments:True"}, {"fits", true}});
  CHECK(t["findings"][1]["message"].get<std::string>().ends_with("; replay: expandable_segments:True would have fit it"));
  // The advice is that setting; it makes the cache stranded in segments usable.
  CHECK(t["findings"][1]["advice"].get<std::string>().find("expandable_segments:True") != std::string::npos);
  CHECK(t["findings"][1]["saves"] == o["reserved_unallocated"]);
  Run replay = run("replay " + quote(trace) + " --alloc-conf expandable_segments:True");
  CHECK(replay.out.find("OOMs 0") != std::string::npos);
  Run same = run("replay " + quote(trace));
  CHECK(same.out.find("OOMs 2") != std::string::npos);
}

namespace {
std::uint64_t peak_bytes_at(const nlohmann::json& t, const std::string& file_line) {
  for (const auto& s : sim(t)["peak_allocated"]["by_site"])
    if (at_line(s["site"], file_line)) return s["bytes"];
  return 0;
}
std::uint64_t peak_category(const nlohmann::json& t, const std::string& category) {
  for (const auto& c : sim(t)["peak_allocated"]["by_category"])
    if (c["category"] == category) return c["bytes"];
  return 0;
}
}  // namespace

TEST_CASE("gpt_tiny: attention keeps batch x heads x T x T per layer: twice the sequence, four times the bytes", "[samples]") {
  // 2 layers, batch 8, 4 heads: the probabilities kept for backward are 8 x 4 x T x T
  // floats per layer, all sited at the attention call in CausalSelfAttention::forward
  // (a module the user wrote: its own lines are the sites).
  const std::string attention = line_of("gpt_tiny.cpp", "F::scaled_dot_product_attention(");
  auto t128 = report_of("gpt_tiny", "--seq 128 --steps 2");
  auto t256 = report_of("gpt_tiny", "--seq 256 --steps 2");
  const std::uint64_t a128 = peak_bytes_at(t128, attention), a256 = peak_bytes_at(t256, attention);
  CHECK(a128 >= 2u * 8 * 4 * 128 * 128 * 4);
  CHECK(a256 >= 2u * 8 * 4 * 256 * 256 * 4);
  CHECK(a256 >= a128 * 7 / 2);  // T^2: about 4x
  CHECK(a256 <= a128 * 9 / 2);
  INFO(sim(t256)["peak_allocated"].dump());
  // The largest site of the forward at 256. (The backward's gradients in flight are all
  // sited at the one loss.backward() line, a sum over every layer, not a line of the model.)
  const std::string backward = line_of("gpt_tiny.cpp", "loss.backward();");
  for (const auto& site : sim(t256)["peak_allocated"]["by_site"])
    if (!at_line(site["site"], backward)) {
      CHECK(at_line(site["site"], attention));
      break;
    }
  CHECK(t128["findings"].empty());  // a correct transformer raises no alarm
  CHECK(t256["findings"].empty());
  CHECK(t256["steps"] == 2);
}

TEST_CASE("gpt_tiny: checkpointing lowers the activation peak; accumulation follows the micro-batch", "[samples]") {
  auto plain = report_of("gpt_tiny", "--seq 256 --steps 2");
  auto checkpointed = report_of("gpt_tiny", "--seq 256 --steps 2 --checkpoint");
  auto accumulated = report_of("gpt_tiny", "--seq 256 --steps 2 --accumulate 4");
  const std::uint64_t peak = sim(plain)["peak_allocated"]["allocated"];
  INFO(sim(checkpointed)["peak_allocated"].dump());
  // Only the blocks' inputs are kept through the forward; each block's activations live
  // only while backward recomputes it.
  CHECK(peak_category(checkpointed, "activation") * 10 < peak_category(plain, "activation") * 7);
  CHECK(sim(checkpointed)["peak_allocated"]["allocated"].get<std::uint64_t>() * 10 < peak * 9);
  CHECK(sim(accumulated)["peak_allocated"]["allocated"].get<std::uint64_t>() * 2 < peak);
  CHECK(checkpointed["findings"].empty());
  CHECK(accumulated["findings"].empty());
}

TEST_CASE("cnn_classifier: memory by layer - the full-resolution block holds the most", "[samples]") {
  // Batch 64 of 32 x 32 images, 8 then 16 channels, each pooling quartering the pixels.
  // forward() has one line per layer, and a module the user writes runs as user code, so
  // each line is a site of its own at the peak.
  auto t = report_of("cnn_classifier", "--steps 3 --batch 64 --size 32");
  auto line = [](const std::string& marker, int after) {
    std::string at = line_of("cnn_classifier.cpp", marker);
    auto colon = at.rfind(':');
    return at.substr(0, colon + 1) + std::to_string(std::stoi(at.substr(colon + 1)) + after);
  };
  std::uint64_t block1 = 0, block2 = 0;
  for (int i = 0; i < 3; ++i)
    block1 += peak_bytes_at(t, line("// block 1", i)), block2 += peak_bytes_at(t, line("// block 2", i));
  INFO(sim(t)["peak_allocated"].dump());
  CHECK(peak_bytes_at(t, line("// block 1", 0)) == 64u * 8 * 32 * 32 * 4);  // conv1's output, kept for batch norm
  CHECK(block1 > block2);
  CHECK(block2 > 0);
  CHECK(t["findings"].empty());
  CHECK(t["steps"] == 3);
}

TEST_CASE("gpt_tiny: bfloat16 autocast halves the activations at the peak", "[samples]") {
  auto fp32 = report_of("gpt_tiny", "--seq 256 --steps 2");
  auto bf16 = report_of("gpt_tiny", "--seq 256 --steps 2 --bf16");
  INFO(sim(bf16)["peak_allocated"].dump());
  // Every activation the blocks keep is 2 bytes an element under autocast; the loss (in
  // float32) and the bfloat16 copies of the weights add a little back.
  CHECK(peak_category(bf16, "activation") * 10 < peak_category(fp32, "activation") * 6);
  CHECK(sim(bf16)["peak_allocated"]["allocated"].get<std::uint64_t>() * 10 <
        sim(fp32)["peak_allocated"]["allocated"].get<std::uint64_t>() * 7);
  // The attention probabilities are bfloat16 too: the attention line holds half its fp32 bytes.
  const std::string attention = line_of("gpt_tiny.cpp", "F::scaled_dot_product_attention(");
  CHECK(peak_bytes_at(bf16, attention) * 10 < peak_bytes_at(fp32, attention) * 6);
  CHECK(bf16["findings"].empty());
}

TEST_CASE("every sample names its memory: under 2% unknown at each device's peak, on sim and on cpu", "[samples][categories]") {
  // Parameters and module buffers, gradients, optimizer state, activations (an evaluation's
  // too), temporaries and the data the program makes: what is left unknown must stay a
  // sliver, whatever the model (MLP, CNN, transformer) and whichever device serves cuda().
  for (const char* name :
       {"linear_regression", "linear_regression_fixed", "leak_loss_history", "mlp_classifier", "transfer_in_loop", "buffer_reuse",
        "contiguity", "broadcast_truth", "inplace_autograd", "oom_recovery", "gpt_tiny", "cnn_classifier"})
    for (const char* device : {"sim", "cpu"}) {
      // oom_recovery fills its device until it refuses: on cpu that is this machine's memory.
      if (std::string(name) == "oom_recovery" && std::string(device) == "cpu") continue;
      const std::string trace = temp(std::string(name) + "-" + device + ".memtrace");
      Run r = run("record --device " + std::string(device) + " -o " + quote(trace) + " -- " + quote(sample(name)));
      INFO(name << " on " << device << ": " << r.out);
      REQUIRE(r.status == 0);
      const nlohmann::json t = report_json(trace);
      for (const auto& d : t["devices"]) {
        const auto& peak = d["peak_allocated"];
        std::uint64_t unknown = 0;
        for (const auto& c : peak["by_category"])
          if (c["category"] == "unknown") unknown = c["bytes"];
        INFO(d["name"] << " at its peak: " << peak["by_category"].dump());
        CHECK(unknown * 50 < peak["allocated"].get<std::uint64_t>());
      }
      std::filesystem::remove(trace);
    }
}
