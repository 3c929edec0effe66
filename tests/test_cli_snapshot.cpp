// PyTorch snapshots through the real `memlens` binary: the figures of every shared real
// snapshot against a ground truth that Python's own pickle module computes
// (tests/snapshot_truth.py, nothing of memlens), and each command on real files.
#include <filesystem>
#include <fstream>

#include "memlens_cli.hpp"

using namespace memlens::test;
using nlohmann::json;

namespace {

const std::string kDir = TORCH_SNAPSHOTS_DIR;
const char* const kFiles[] = {"kk_memory_ctx128_fullstep.pickle", "silmont_forward_bf16_128.pickle",
                              "silmont_mem_snapshot.pickle", "voxelflex_dump_snapshot.pickle"};

// Why the real-file tests cannot run here, "" when they can.
std::string missing_prerequisite(bool python) {
  if (!std::filesystem::exists(kDir)) return kDir + " is absent (the snapshots live in the project's shared folder)";
  if (python && run_command("python3 -c 'import pickle, json'").status != 0) return "python3 is not installed";
  return "";
}

void spit(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
}

}  // namespace

TEST_CASE("snapshots: per-device figures and the sites at the peak equal Python's ground truth, to the byte", "[cli][snapshot]") {
  if (auto why = missing_prerequisite(true); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  for (const char* name : kFiles) {
    INFO(name);
    const std::string file = kDir + "/" + name;
    Run truth = run_command("python3 " + quote(SNAPSHOT_TRUTH_PY) + " " + quote(file));
    INFO(truth.out);
    REQUIRE(truth.status == 0);
    json expected = json::parse(truth.out);
    json r = report_json(file, "--top 100000");
    CHECK(r["devices"].size() == expected.size());
    for (const json& d : r["devices"]) {
      INFO(d["name"]);
      const json& t = expected.at(d["name"].get<std::string>());
      CHECK(d["allocs"] == t["allocs"]);
      CHECK(d["peak_allocated"]["allocated"] == t["peak_allocated"]);
      CHECK(d["peak_reserved"]["reserved"] == t["peak_reserved"]);
      CHECK(d["final_allocated"] == t["final_allocated"]);
      CHECK(d["final_reserved"] == t["final_reserved"]);
      json sites = json::object();
      for (const json& s : d["peak_allocated"]["by_site"]) sites[s["site"].get<std::string>()] = s["bytes"];
      CHECK(sites == t["peak_sites"]);
    }
  }
}

TEST_CASE("snapshots: import writes a trace that reports the same as the snapshot itself", "[cli][snapshot]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string file = kDir + "/kk_memory_ctx128_fullstep.pickle";
  const std::string trace = temp("kk.memtrace");
  Run imp = run("import " + quote(file) + " -o " + quote(trace));
  INFO(imp.out);
  REQUIRE(imp.status == 0);
  CHECK(imp.out.find("(pickle, 19342 trace entries, 1 device)") != std::string::npos);
  json a = report_json(file), b = report_json(trace);
  CHECK(a["devices"] == b["devices"]);
  CHECK(a["allocations_by_site"] == b["allocations_by_site"]);
  CHECK(b["program"] == "kk_memory_ctx128_fullstep.pickle");
  // The whole stack stays: Python and C++ frames of an allocation, innermost first.
  Run ev = run("export " + quote(trace) + " --json " + quote(temp("kk.jsonl")));
  REQUIRE(ev.status == 0);
  std::remove(trace.c_str());
  std::remove(temp("kk.jsonl").c_str());
}

TEST_CASE("snapshots: steps from an annotation or a Python frame make growth and churn work", "[cli][snapshot]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string file = kDir + "/kk_memory_ctx128_fullstep.pickle";
  // One optimiser step in this run: one range named "Optimizer.step#AdamW.step", and one
  // run of allocations under cs336_systems/optimizers.py's step().
  CHECK(report_json(file)["steps"] == 0);
  CHECK(report_json(file, "--step-at-scope 'Optimizer.step*'")["steps"] == 1);
  CHECK(report_json(file, "--step-at optimizers.step")["steps"] == 1);
  CHECK(report_json(file, "--step-at 'no_such_function'")["steps"] == 0);
}

TEST_CASE("snapshots: what is alive at the dump is the working set, not a leak", "[cli][snapshot]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  Run r = run("leaks " + quote(kDir + "/silmont_mem_snapshot.pickle"));
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("30.25 MiB alive when the snapshot was taken, mid-run: the working set then, not leaks by") !=
        std::string::npos);
  const json report = report_json(kDir + "/silmont_mem_snapshot.pickle");
  for (const json& f : report["findings"]) CHECK(f["kind"] != "leak");
  Run c = run("check " + quote(kDir + "/silmont_mem_snapshot.pickle") + " --no-leaks");
  CHECK(c.status == 0);
}

TEST_CASE("snapshots: check fails a limit naming the sites, diff compares two real runs, replay tries a setting",
          "[cli][snapshot]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string kk = kDir + "/kk_memory_ctx128_fullstep.pickle";
  const std::string fwd = kDir + "/silmont_forward_bf16_128.pickle";
  Run check = run("check " + quote(kk) + " --max-peak 40GiB");
  INFO(check.out);
  CHECK(check.status == 1);
  // 54,802,667,524 bytes at the peak (Python's figure, above).
  CHECK(check.out.find("FAIL max-peak: peak allocated on cuda:0 is 51.04 GiB") != std::string::npos);
  CHECK(check.out.find("12.69 GiB at /home/c-kaitwang/assignment1/cs336_basics/optimizers.py:82") != std::string::npos);
  CHECK(run("check " + quote(kk) + " --max-peak 52GiB").status == 0);

  Run diff = run("diff " + quote(fwd) + " " + quote(kk));
  INFO(diff.out);
  CHECK(diff.status == 0);
  CHECK(diff.out.find("cuda:0") != std::string::npos);
  CHECK(diff.out.find("51.04 GiB") != std::string::npos);
  // Per stack at the peak: AdamW's two moment buffers, 12.69 GiB each, are new in B
  // (the peak sites above), told apart by their line in optimizers.py.
  Run jd = run("diff --format json " + quote(fwd) + " " + quote(kk));
  REQUIRE(jd.status == 0);
  json stacks = json::parse(jd.out)["stacks_at_peak"];
  int moments = 0;
  for (const json& s : stacks) {
    const std::string key = s["key"];
    if (key.ends_with("> optimizers.py:82") || key.ends_with("> optimizers.py:84")) {
      ++moments;
      CHECK(s["a"] == 0);
      CHECK(s["b"] == 13627238400);  // each site's bytes at the peak, as Python's ground truth has them
    }
  }
  CHECK(moments == 2);

  Run replay = run("replay " + quote(kk) + " --alloc-conf expandable_segments:True");
  INFO(replay.out);
  CHECK(replay.status == 0);
  // 7,095 allocations (324 before the first entry) and 5,894 frees.
  CHECK(replay.out.find("replaying 12989 requests of cuda:0 from") != std::string::npos);
  // The run's own configuration reproduces the recorded peak reserved (56.91 GiB, as
  // Python's ground truth says: 61,111,009,280 bytes); expandable segments save 5.22 GiB.
  CHECK(replay.out.find("change: peak reserved 56.91 GiB -> 51.69 GiB (-5.22 GiB), OOMs 0 -> 0") != std::string::npos);
}

TEST_CASE("snapshots: the JSON form, a bare segment list, and old entries without time", "[cli][snapshot]") {
  // Hand-computed: a 20 MiB segment at start holding a 1000-byte block (state at dump
  // minus the trace: the 512-byte alloc came later and was freed), then a 2 MiB segment
  // with a 3000-byte block. Peak allocated 1000 + 512 = 1512 before the free, 4000 after;
  // reserved 20 MiB + 2 MiB.
  const std::string doc = R"({"segments": [
      {"device": 0, "address": 1048576, "total_size": 20971520, "segment_type": "large",
       "blocks": [{"address": 1048576, "size": 1024, "requested_size": 1000, "state": "active_allocated"},
                  {"address": 1049600, "size": 20970496, "requested_size": 0, "state": "inactive"}]},
      {"device": 0, "address": 67108864, "total_size": 2097152, "segment_type": "small",
       "blocks": [{"address": 67108864, "size": 3072, "requested_size": 3000, "state": "active_allocated"}]}],
    "device_traces": [[
      {"action": "alloc", "addr": 1049600, "size": 512, "stream": 0},
      {"action": "free_requested", "addr": 1049600, "size": 512, "stream": 0},
      {"action": "free_completed", "addr": 1049600, "size": 512, "stream": 0},
      {"action": "segment_alloc", "addr": 67108864, "size": 2097152, "stream": 0},
      {"action": "alloc", "addr": 67108864, "size": 3000, "stream": 0,
       "frames": [{"filename": "/home/me/train.py", "line": 7, "name": "main"}]}]],
    "allocator_settings": {"expandable_segments": false}})";
  const std::string path = temp("snap.json");
  spit(path, doc);
  json r = report_json(path, "--top 100");
  REQUIRE(r["devices"].size() == 1);
  const json& d = r["devices"][0];
  CHECK(d["name"] == "cuda:0");
  CHECK(d["allocs"] == 3);
  CHECK(d["peak_allocated"]["allocated"] == 4000);
  CHECK(d["peak_reserved"]["reserved"] == 20971520 + 2097152);
  CHECK(d["final_allocated"] == 4000);
  json sites = json::object();
  for (const json& s : d["peak_allocated"]["by_site"]) sites[s["site"].get<std::string>()] = s["bytes"];
  CHECK(sites == json{{"<before recording>", 1000}, {"/home/me/train.py:7", 3000}});
  CHECK(d["ooms"] == 0);
  // The whole stack of the one allocation that has frames, as the file gives it.
  REQUIRE(d["peak_allocated"]["by_stack"].size() == 1);
  const json& st = d["peak_allocated"]["by_stack"][0];
  CHECK(st["bytes"] == 3000);
  CHECK(st["site"] == "/home/me/train.py:7");
  CHECK(st["frames"] == json::parse(R"([{"location": "/home/me/train.py:7", "function": "main", "language": "python"}])"));
  Run text = run("peak --stacks " + quote(path));
  CHECK(text.out.find("stack holding 2.93 KiB in 1 blocks, charged to /home/me/train.py:7:") != std::string::npos);

  // torch.cuda.memory_snapshot() dumped bare: the segments alone, state at dump.
  spit(path,
       "[{\"device\": 1, \"address\": 4096, \"total_size\": 2097152, \"blocks\": "
       "[{\"address\": 4096, \"size\": 512, \"requested_size\": 100, \"state\": \"active_allocated\"}]}]");
  json bare = report_json(path);
  REQUIRE(bare["devices"].size() == 1);
  CHECK(bare["devices"][0]["name"] == "cuda:1");
  CHECK(bare["devices"][0]["final_allocated"] == 100);
  std::remove(path.c_str());
}

TEST_CASE("snapshots: hostile input gets one line with where, exit 2, and no code runs", "[cli][snapshot]") {
  const std::string path = temp("bad.pickle");
  struct Case {
    std::string data, message;
  };
  const Case cases[] = {
      // GLOBAL os.system: what a malicious pickle starts with.
      {std::string("\x80\x04\x63os\nsystem\n", 12),
       "pickle offset 2: opcode GLOBAL (0x63) is not allowed: a memory snapshot holds only plain data, and memlens "
       "executes no pickle code"},
      // A str declaring 4 GiB in a 10-byte file.
      {std::string("\x80\x04\x58\xff\xff\xff\xff"
                   "ab.",
                   10),
       "pickle offset 2: a str of 4294967295 bytes in the 3 bytes left"},
      // Truncated: a dict never finished.
      {std::string("\x80\x04\x7d", 3), "pickle offset 3: the pickle ends without STOP"},
      {"{\"segments\": 7}", "segments: expected a list, found int"},
      {"{\"device_traces\": [[{\"action\": \"alloc\", \"addr\": -5, \"size\": 1}]]}",
       "device_traces[0][0].addr: expected a non-negative int, found -5"},
      {"{\"device_traces\": [[{\"action\": \"alloc\", \"addr\": 5, \"size\": 1, \"stream\": -1}]]}",
       "device_traces[0][0].stream: expected a non-negative int, found -1"},
      {"{\"device_traces\": [], \"external_annotations\": [{\"stage\": \"START\", \"name\": \"a\", \"device\": -2}]}",
       "external_annotations[0].device: expected a non-negative int, found -2"},
      // Three million empty dicts in 9 MB (a real snapshot takes about its own size in memory).
      {"[" +
           [] {
             std::string dicts;
             for (int i = 0; i < 3'000'000; ++i) dicts += "{},";
             return dicts;
           }() +
           "{}]",
       "the document holds more values than its size allows (over 68 MiB in memory): not a snapshot"},
      {"{\"segments\": [",
       "JSON offset 15: syntax error while parsing value - unexpected end of input; expected '[', "
       "'{', or a literal"},
      {std::string(100, '[') + std::string(100, ']'), "JSON: nested deeper than 64 levels"},
      // A byte that is not UTF-8: the whole reason, the byte quoted as text (was: "'\"" and the raw byte).
      {"{\"segments\": [\"\xff\xfe\"]}",
       "JSON offset 16: syntax error while parsing value - invalid string: ill-formed UTF-8 byte; last read: "
       "'\"\\xff'"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    spit(path, c.data);
    Run r = run("report " + quote(path));
    CHECK(r.status == 2);
    CHECK(r.out == "memlens: " + path + ": " + c.message + "\n");
  }
  Run imp = run("import " + quote(path) + " -o " + quote(temp("bad.memtrace")));
  CHECK(imp.status == 2);
  CHECK_FALSE(std::filesystem::exists(temp("bad.memtrace")));
  std::remove(path.c_str());
}

TEST_CASE("snapshots: an OOM entry is explained: what held the device, and which setting would have fit it", "[cli][snapshot]") {
  // One 20 MiB segment on a device with 10 MiB more free (30 MiB in all). Three 6 MiB
  // tensors, the middle one freed: 8 MiB free inside the segment in two pieces (6 + 2),
  // and an 11 MiB request fails. Hand-computed: 12 MiB held, 8 MiB cached but
  // unallocated, largest free block 6 MiB. PyTorch's policy needs a new 12 MiB segment
  // (11 MiB rounded to 2 MiB) and the device has 10: replay as recorded fails too.
  // Expandable segments grow the one segment instead: 12 + 11 MiB fit in 30.
  const std::string doc = R"({"segments": [{"device": 0, "address": 0, "total_size": 20971520, "segment_type": "large",
      "blocks": [{"address": 0, "size": 6291456, "requested_size": 6291456, "state": "active_allocated"},
                 {"address": 6291456, "size": 6291456, "requested_size": 0, "state": "inactive"},
                 {"address": 12582912, "size": 6291456, "requested_size": 6291456, "state": "active_allocated"},
                 {"address": 18874368, "size": 2097152, "requested_size": 0, "state": "inactive"}]}],
    "device_traces": [[
      {"action": "segment_alloc", "addr": 0, "size": 20971520, "stream": 0, "time_us": 1},
      {"action": "alloc", "addr": 0, "size": 6291456, "stream": 0, "time_us": 2,
       "frames": [{"filename": "/home/me/train.py", "line": 3, "name": "main"}]},
      {"action": "alloc", "addr": 6291456, "size": 6291456, "stream": 0, "time_us": 3,
       "frames": [{"filename": "/home/me/train.py", "line": 4, "name": "main"}]},
      {"action": "alloc", "addr": 12582912, "size": 6291456, "stream": 0, "time_us": 4,
       "frames": [{"filename": "/home/me/train.py", "line": 5, "name": "main"}]},
      {"action": "free_requested", "addr": 6291456, "size": 6291456, "stream": 0, "time_us": 5},
      {"action": "free_completed", "addr": 6291456, "size": 6291456, "stream": 0, "time_us": 5},
      {"action": "oom", "addr": 0, "size": 11534336, "stream": 0, "device_free": 10485760, "time_us": 6,
       "frames": [{"filename": "/home/me/train.py", "line": 9, "name": "main"}]}]],
    "allocator_settings": {"expandable_segments": false}})";
  const std::string path = temp("oom.json");
  spit(path, doc);
  json r = report_json(path);
  REQUIRE(r["fragmentation"]["ooms"].size() == 1);
  const json& o = r["fragmentation"]["ooms"][0];
  CHECK(o["site"] == "/home/me/train.py:9");
  CHECK(o["requested"] == 11534336);
  CHECK(o["device_free"] == 10485760);
  CHECK(o["reserved"] == 20971520);
  CHECK(o["allocated"] == 12582912);
  CHECK(o["reserved_unallocated"] == 8388608);
  CHECK(o["largest_free_block"] == 6291456);
  CHECK(o["replay_capacity"] == 20971520 + 10485760);  // reserved then plus free
  json held = json::object();
  for (const json& s : o["holding"]["by_site"]) held[s["site"].get<std::string>()] = s["bytes"];
  CHECK(held == json{{"/home/me/train.py:3", 6291456}, {"/home/me/train.py:5", 6291456}});
  CHECK(o["replay"] == json::parse(R"([{"config": "as recorded", "fits": false},
      {"config": "expandable_segments:True", "fits": true}, {"config": "max_split_size_mb:128", "fits": false},
      {"config": "roundup_power2_divisions:4", "fits": false}])"));
  Run text = run("fragmentation " + quote(path));
  CHECK(text.out.find("OOM on cuda:0 at 0.000 s asking for 11.00 MiB at /home/me/train.py:9") != std::string::npos);
  CHECK(text.out.find("free on the device 10.00 MiB; reserved 20.00 MiB, of which 8.00 MiB cached but unallocated;") !=
        std::string::npos);
  CHECK(text.out.find("replay on a 30.00 MiB device: as recorded fails too; expandable_segments:True fits it;") !=
        std::string::npos);
  std::remove(path.c_str());
}

namespace {

struct ImportedAlloc {
  std::string site;  // file:line of the innermost frame memlens sites it at
  std::uint64_t size;
  std::string category;
};

// An imported trace's alloc events, in order.
std::vector<ImportedAlloc> imported_allocs(const std::string& snapshot) {
  const std::string trace = temp("categories.memtrace"), events = temp("categories.jsonl");
  Run imported = run("import -o " + quote(trace) + " " + quote(snapshot));
  INFO(imported.out);
  REQUIRE(imported.status == 0);
  Run exported = run("export --json " + quote(events) + " " + quote(trace));
  REQUIRE(exported.status == 0);
  std::vector<ImportedAlloc> out;
  std::ifstream in(events);
  for (std::string line; std::getline(in, line);) {
    json e = json::parse(line);
    if (e["kind"] != "alloc") continue;
    const std::string site = e.value("site", "");
    out.push_back({site.substr(site.rfind('/') + 1), e["size"], e["category"]});
  }
  std::filesystem::remove(trace);
  std::filesystem::remove(events);
  return out;
}

// Each block's size -> its category, for files whose blocks all differ in size.
std::map<std::uint64_t, std::string> category_by_size(const std::string& snapshot) {
  std::map<std::uint64_t, std::string> out;
  for (const ImportedAlloc& a : imported_allocs(snapshot)) out[a.size] = a.category;
  return out;
}

// A report's bytes per category at a device's peak.
std::map<std::string, std::uint64_t> peak_categories(const json& device) {
  std::map<std::string, std::uint64_t> out;
  for (const json& c : device["peak_allocated"]["by_category"]) out[c["category"]] = c["bytes"];
  return out;
}

}  // namespace

TEST_CASE("snapshots: each block's category follows a stated rule, at each rule's edge", "[cli][snapshot][categories]") {
  // One block per case, told apart by its size; the frames say who allocated or freed it.
  const std::string user = R"({"filename": "/home/me/train.py", "line": 9, "name": "forward"})";
  const std::string engine =
      R"j({"filename": "??", "line": 0, "name": "torch::autograd::Engine::evaluate_function(std::shared_ptr<GraphTask>&)"})j";
  const std::string optimizer = R"({"filename": "/home/me/optim.py", "line": 40, "name": "step"})";
  std::string entries;
  std::uint64_t t = 1000;
  auto entry = [&](const char* action, std::uint64_t addr, std::uint64_t size, const std::string& frame) {
    entries += std::string(entries.empty() ? "" : ",\n") + R"({"action": ")" + action + R"(", "addr": )" + std::to_string(addr) +
               R"(, "size": )" + std::to_string(size) + R"(, "stream": 0, "time_us": )" + std::to_string(t++) +
               R"(, "frames": [)" + frame + "]}";
  };
  auto alloc = [&](std::uint64_t addr, std::uint64_t size, const std::string& frame) { entry("alloc", addr, size, frame); };
  auto free = [&](std::uint64_t addr, std::uint64_t size, const std::string& frame) {
    entry("free_requested", addr, size, frame);
    entry("free_completed", addr, size, frame);
  };
  const std::uint64_t base = 1u << 20;
  // Forward: a value kept for backward (freed by the engine), a temporary (freed two entries
  // on), and a value alive to the end that no rule names.
  alloc(base + 0x10000, 1536, user);  // activation
  alloc(base + 0x20000, 2560, user);  // temporary
  free(base + 0x20000, 2560, user);
  alloc(base + 0x30000, 3584, user);  // unknown
  // Backward: a gradient (alive after the pass), a node's temporary, a gradient in flight
  // (freed more than 16 entries later, still inside the pass).
  alloc(base + 0x40000, 4608, engine);  // gradient
  alloc(base + 0x50000, 5632, engine);  // temporary
  free(base + 0x50000, 5632, engine);
  alloc(base + 0x60000, 6656, engine);  // autograd_detail
  for (int i = 0; i < 10; ++i) {
    alloc(base + 0x70000, 512, engine);
    free(base + 0x70000, 512, engine);
  }
  free(base + 0x60000, 6656, engine);
  free(base + 0x10000, 1536, engine);
  // The optimizer step: a moment (alive after the step) and a temporary of the step.
  const std::string step_start =
      R"({"stage": "START", "name": "Optimizer.step#AdamW.step", "device": 0, "time_us": )" + std::to_string(t++) + "}";
  alloc(base + 0x80000, 7680, optimizer);  // optimizer_state
  alloc(base + 0x90000, 8704, optimizer);  // temporary
  free(base + 0x90000, 8704, optimizer);
  const std::string step_end =
      R"({"stage": "END", "name": "Optimizer.step#AdamW.step", "device": 0, "time_us": )" + std::to_string(t++) + "}";
  alloc(base + 0xa0000, 9728, user);  // after the step, alive: unknown
  const std::string doc = R"({"segments": [{"device": 0, "address": 1048576, "total_size": 20971520, "segment_type": "large",
      "blocks": [{"address": 1048576, "size": 1024, "requested_size": 1024, "state": "active_allocated"},
                 {"address": 1245184, "size": 3584, "requested_size": 3584, "state": "active_allocated"},
                 {"address": 1310720, "size": 4608, "requested_size": 4608, "state": "active_allocated"},
                 {"address": 1572864, "size": 7680, "requested_size": 7680, "state": "active_allocated"},
                 {"address": 1703936, "size": 9728, "requested_size": 9728, "state": "active_allocated"}]}],
    "device_traces": [[)" +
                          entries + R"(]],
    "external_annotations": [)" +
                          step_start + ", " + step_end + R"(],
    "allocator_settings": {"expandable_segments": false}})";
  const std::string path = temp("categories.json");
  spit(path, doc);
  const std::map<std::uint64_t, std::string> got = category_by_size(path);
  CHECK(got.at(1024) == "before_recording");  // alive before the first entry: never guessed
  CHECK(got.at(1536) == "activation");
  CHECK(got.at(2560) == "temporary");
  CHECK(got.at(3584) == "unknown");
  CHECK(got.at(4608) == "gradient");
  CHECK(got.at(5632) == "temporary");
  CHECK(got.at(6656) == "autograd_detail");
  CHECK(got.at(512) == "temporary");
  CHECK(got.at(7680) == "optimizer_state");
  CHECK(got.at(8704) == "temporary");
  CHECK(got.at(9728) == "unknown");
  std::filesystem::remove(path);
}

TEST_CASE("snapshots: a real full training step is named, unknown under 5% of its peak", "[cli][snapshot][categories]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  // kk_memory_ctx128_fullstep: a Transformer LM's forward, backward and AdamW step, recorded
  // after the model was built. By hand, from its stacks and annotations:
  // - AdamW's two moments, optimizers.py:82 and :84, are made inside
  //   `Optimizer.step#AdamW.step` and outlive it: optimizer state;
  // - the weights' gradients are made by the autograd engine (BmmBackward0's frames) and
  //   outlive backward: gradients;
  // - the weights were made before the history was turned on: before recording;
  // - what the step makes and frees inside itself (optimizers.py:100): temporary.
  const std::string file = kDir + "/kk_memory_ctx128_fullstep.pickle";
  json r = report_json(file, "--top 100");
  const json& peak = r["devices"][0]["peak_allocated"];
  std::map<std::string, std::uint64_t> bytes = peak_categories(r["devices"][0]);
  const std::uint64_t total = peak["allocated"];
  INFO(peak["by_category"].dump());
  CHECK(bytes["unknown"] * 20 < total);
  std::map<std::string, std::uint64_t> site;
  for (const json& s : peak["by_site"])
    site[s["site"].get<std::string>().substr(s["site"].get<std::string>().rfind('/') + 1)] = s["bytes"];
  CHECK(bytes["optimizer_state"] == site["optimizers.py:82"] + site["optimizers.py:84"]);
  CHECK(bytes["before_recording"] == site["<before recording>"]);
  CHECK(bytes["gradient"] >= site["autograd:BmmBackward0"]);
  CHECK(bytes["temporary"] == site["optimizers.py:100"]);
}

TEST_CASE("snapshots: check holds a category's bytes at the peak to a limit", "[cli][snapshot][categories]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  // AdamW's moments at kk's peak: 291 + 291 blocks at optimizers.py:82 and :84, 25.38 GiB.
  const std::string file = kDir + "/kk_memory_ctx128_fullstep.pickle";
  Run over = run("check --max-category optimizer_state=20GiB " + quote(file));
  INFO(over.out);
  CHECK(over.status == 1);
  CHECK(over.out.find("optimizer_state at the peak on cuda:0 is 25.38 GiB") != std::string::npos);
  Run within = run("check --max-category optimizer_state=30GiB --max-category unknown=1GiB " + quote(file));
  INFO(within.out);
  CHECK(within.status == 0);
  Run bad = run("check --max-category weights=1GiB " + quote(file));
  CHECK(bad.status == 2);
  CHECK(bad.out ==
        "memlens: --max-category: expected CATEGORY=SIZE with CATEGORY one of unknown, parameter, gradient, optimizer_state, "
        "activation, temporary, input, autograd_detail, before_recording, got 'weights=1GiB'\n");
}

TEST_CASE("snapshots: files without a whole step are named only as far as their stacks show", "[cli][snapshot][categories]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  SECTION("voxelflex: segments only, no history: everything was there before the recording") {
    json r = report_json(kDir + "/voxelflex_dump_snapshot.pickle");
    const json& d = r["devices"][0];
    CHECK(peak_categories(d) ==
          std::map<std::string, std::uint64_t>{{"before_recording", d["peak_allocated"]["allocated"].get<std::uint64_t>()}});
  }
  SECTION("silmont forward: no backward frames and no optimizer step, so no gradient, state or activation") {
    // Its one annotation is Optimizer.zero_grad, not a step; its autograd frames are
    // VariableType's (forward ops), never the engine's.
    for (const ImportedAlloc& a : imported_allocs(kDir + "/silmont_forward_bf16_128.pickle")) {
      INFO(a.site << " " << a.size);
      CHECK((a.category == "before_recording" || a.category == "unknown" || a.category == "temporary"));
    }
  }
  SECTION("silmont's small script: softmax's forward values are freed by backward, the engine's survivors are gradients") {
    // trace_peak_memory.py: custom_softmax's 512 MiB values at lines 7 and 9 are kept for
    // backward and freed by the engine (entries 72 and 57), line 7's first 512 MiB (entry
    // 14) is freed by the next line's op three entries on; the attention scores at line 13
    // are freed by main 16 entries on; the inputs at lines 35-37 live to the end with no
    // rule to name them. Backward (entries 33-94) leaves five blocks alive at the end, the
    // gradients: _make_grads' 4-byte seed and the engine's 8.5 MB and three 2 MiB blocks.
    std::map<std::string, std::vector<std::string>> at;
    std::vector<std::uint64_t> gradients;
    for (const ImportedAlloc& a : imported_allocs(kDir + "/silmont_mem_snapshot.pickle")) {
      at[a.site].push_back(a.category);
      if (a.category == "gradient") gradients.push_back(a.size);
    }
    std::sort(gradients.begin(), gradients.end());
    CHECK(gradients == std::vector<std::uint64_t>{4, 2097152, 2097152, 2097152, 8519680});
    CHECK(at["trace_peak_memory.py:7"] == std::vector<std::string>{"temporary", "activation"});
    CHECK(at["trace_peak_memory.py:9"] == std::vector<std::string>{"activation"});
    CHECK(at["trace_peak_memory.py:13"] == std::vector<std::string>{"temporary"});
    for (const char* line : {"trace_peak_memory.py:35", "trace_peak_memory.py:36", "trace_peak_memory.py:37"})
      CHECK(at[line] == std::vector<std::string>{"unknown"});
    json r = report_json(kDir + "/silmont_mem_snapshot.pickle", "--top 100");
    std::map<std::string, std::uint64_t> bytes = peak_categories(r["devices"][0]);
    CHECK(bytes.count("optimizer_state") == 0);
  }
}

TEST_CASE("snapshots: diff compares two runs' categories at the peak", "[cli][snapshot][categories]") {
  if (auto why = missing_prerequisite(false); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string a = kDir + "/silmont_mem_snapshot.pickle", b = kDir + "/kk_memory_ctx128_fullstep.pickle";
  Run d = run("diff --format json " + quote(a) + " " + quote(b));
  INFO(d.out);
  REQUIRE(d.status == 0);
  json rows = json::parse(d.out)["categories_at_peak"];
  json kk = report_json(b);
  const std::map<std::string, std::uint64_t> expected = peak_categories(kk["devices"][0]);
  bool saw_state = false;
  for (const json& row : rows)
    if (row["key"] == "optimizer_state") {
      saw_state = true;
      CHECK(row["a"] == 0);
      CHECK(row["b"] == expected.at("optimizer_state"));
    }
  CHECK(saw_state);
}
