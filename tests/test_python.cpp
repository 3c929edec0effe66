// memlens on real PyTorch programs, through the real `memlens record -- python3 ...`: each
// program of tests/python/programs must report exactly the findings its manifest lists
// (kind at line), its clean twin nothing; a program and its port to memlens' C++ runtime
// report the same kinds at their own lines; the trace's peak and final bytes equal what
// the program holds. Each case is counted skipped, with the reason, where the Python
// interpreter cannot import torch (scripts/install-deps.sh installs Debian's python3-torch).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "memlens/common/event_kinds.hpp"
#include "memlens/common/scalar_type.hpp"
#include "memlens_cli.hpp"

using namespace memlens::test;

namespace {

bool torch_present() {
  static const Run probe = run_command(quote(PYTHON3) + " -c 'import torch'");
  if (probe.status != 0) {
    std::string why = probe.out.substr(probe.out.rfind('\n', probe.out.size() - 2) + 1);
    WARN("PyTorch test skipped: " << PYTHON3 << " cannot import torch: " << why);
  }
  return probe.status == 0;
}

const std::string& recorded_python(const std::string& name, const std::string& script) {
  return recorded("python-" + name, PYTHON3, quote(script));
}

// "kind at FILE:LINE" for each finding of a trace's report.
std::multiset<std::string> findings_of(const std::string& trace) {
  std::multiset<std::string> out;
  const nlohmann::json report = report_json(trace);
  for (const auto& f : report["findings"]) {
    std::string site = f["site"].is_string() ? f["site"].get<std::string>() : "<unknown>";
    auto slash = site.rfind('/');
    out.insert(f["kind"].get<std::string>() + " at " + (slash == std::string::npos ? site : site.substr(slash + 1)));
  }
  return out;
}

std::string line_of(const std::string& path, int n) {
  std::ifstream in(path);
  std::string line;
  for (int i = 0; i < n && std::getline(in, line); ++i) {
  }
  return line;
}

nlohmann::json manifest() {
  std::ifstream in(std::string(PYTHON_TESTS_DIR) + "/manifest.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

std::string file_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

TEST_CASE("PyTorch programs: every planted mistake found at its Python line, nothing on the clean twins", "[python]") {
  if (!torch_present()) return;
  std::size_t expected = 0, found = 0, false_alarms = 0, programs = 0;
  std::set<std::string> names, twins;
  const nlohmann::json m = manifest();
  for (const auto& p : m["programs"]) {
    const std::string name = p["program"];
    const std::string script = std::string(PYTHON_TESTS_DIR) + "/programs/" + name + ".py";
    names.insert(name);
    if (p.contains("twin")) twins.insert(p["twin"].get<std::string>());
    ++programs;
    std::multiset<std::string> got = findings_of(recorded_python(name, script));
    for (const auto& e : p["expect"]) {
      const int line = e["line"];
      INFO(name << ".py:" << line << ": " << line_of(script, line));
      CHECK(line_of(script, line).find("# BUG: " + e["kind"].get<std::string>()) != std::string::npos);
      const std::string want = e["kind"].get<std::string>() + " at " + name + ".py:" + std::to_string(line);
      ++expected;
      if (auto it = got.find(want); it != got.end()) {
        ++found;
        got.erase(it);
      } else {
        std::cout << "python: MISSED " << want << "\n";
      }
    }
    for (const auto& extra : got) std::cout << "python: FALSE ALARM in " << name << ": " << extra << "\n";
    false_alarms += got.size();
  }
  std::cout << "python: " << programs << " programs, recall " << found << "/" << expected << ", false alarms " << false_alarms
            << "\n";
  CHECK(programs >= 10);
  for (const auto& t : twins) CHECK(names.count(t) == 1);
  CHECK(found == expected);
  CHECK(false_alarms == 0);
}

TEST_CASE("a PyTorch program and its port to memlens' runtime get the same findings at their own lines", "[python]") {
  if (!torch_present()) return;
  int pairs = 0;
  const nlohmann::json m = manifest();
  for (const auto& p : m["programs"]) {
    if (!p.contains("port")) continue;
    ++pairs;
    const auto& port = p["port"];
    const std::string name = p["program"];
    const std::string script = std::string(PYTHON_TESTS_DIR) + "/programs/" + name + ".py";
    std::multiset<std::string> python, cpp;
    for (const auto& e : p["expect"])
      python.insert(e["kind"].get<std::string>() + " at " + name + ".py:" + std::to_string(e["line"].get<int>()));
    const std::string source = file_name(port["source"]);
    for (const auto& e : port["expect"])
      cpp.insert(e["kind"].get<std::string>() + " at " + source + ":" + std::to_string(e["line"].get<int>()));
    INFO(name << " and " << port["source"]);
    CHECK(findings_of(recorded_python(name, script)) == python);
    CHECK(findings_of(recorded("port-" + name, std::string(MEMLENS_BUILD_DIR) + "/" + port["program"].get<std::string>(), "")) ==
          cpp);
    // Each Python finding is found in the port too, of the same kind, at its line there.
    for (const auto& e : p["expect"]) {
      const std::string python_line = std::to_string(e["line"].get<int>());
      REQUIRE(port["lines"].contains(python_line));
      CHECK(cpp.count(e["kind"].get<std::string>() + " at " + source + ":" +
                      std::to_string(port["lines"][python_line].get<int>())) == 1);
    }
  }
  CHECK(pairs >= 2);
}

TEST_CASE("a PyTorch program's peak and final bytes are what it held", "[python]") {
  if (!torch_present()) return;
  const std::string trace = temp("python-peak.memtrace");
  Run r = run("record -o " + quote(trace) + " -- " + quote(PYTHON3) + " " + quote(std::string(PYTHON_TESTS_DIR) + "/peak.py"));
  INFO(r.out);
  REQUIRE(r.status == 0);
  // The program's own count, from the garbage collector's tensors.
  auto at = r.out.find("held at the end: ");
  REQUIRE(at != std::string::npos);
  const std::uint64_t held = std::stoull(r.out.substr(at + 17));
  CHECK(held == 20'000 + 4'000);  // d's storage (through the kept view) and e
  nlohmann::json t = report_json(trace);
  REQUIRE(t["devices"].size() == 1);
  const auto& cpu = t["devices"][0];
  CHECK(cpu["name"] == "cpu");
  // a, b and c (16,000 bytes), then d (20,000) while c and b live: a is gone.
  CHECK(cpu["peak_allocated"]["allocated"] == 8'000 + 4'000 + 20'000);
  CHECK(cpu["final_allocated"] == held);
  CHECK(cpu["allocs"] == 5);  // a, b, c, d, e: views and the print make none
}

TEST_CASE("the Python recorder's names for the trace's enums are the trace's own", "[python]") {
  if (!torch_present()) return;
  Run r = run_command("PYTHONPATH=" + quote(std::string(SOURCE_DIR) + "/python") + " " + quote(PYTHON3) +
                      " -c 'from memlens import _vocabulary as v; print(\" \".join(v.CATEGORIES)); "
                      "print(\" \".join(v.VIEW_KINDS)); print(\" \".join(v.COPY_REASONS)); print(\" \".join(v.SCALAR_TYPES))'");
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::string want;
  for (std::size_t i = 0; i < memlens::kCategoryCount; ++i)
    want += std::string(i ? " " : "") + std::string(memlens::category_name(static_cast<memlens::Category>(i)));
  want += "\n";
  for (std::size_t i = 0; i < memlens::kViewKindCount; ++i)
    want += std::string(i ? " " : "") + std::string(memlens::view_kind_name(static_cast<memlens::ViewKind>(i)));
  want += "\n";
  for (std::size_t i = 0; i < memlens::kCopyReasonCount; ++i)
    want += std::string(i ? " " : "") + std::string(memlens::copy_reason_name(static_cast<memlens::CopyReason>(i)));
  want += "\n";
  for (std::size_t i = 0; i < memlens::kScalarTypeCount; ++i)
    want += std::string(i ? " " : "") + std::string(memlens::dtype_repr(static_cast<memlens::ScalarType>(i)));
  want += "\n";
  CHECK(r.out == want);
}

TEST_CASE("a torch.distributed program on two ranks (gloo): one trace per rank, reported side by side", "[python]") {
  if (!torch_present()) return;
  const std::string trace = temp("python-ddp.memtrace");
  Run r =
      run("record -o " + quote(trace) + " -- " + quote(PYTHON3) + " " + quote(std::string(PYTHON_TESTS_DIR) + "/ddp_launch.py"));
  INFO(r.out);
  REQUIRE(r.status == 0);
  const std::string rank0 = temp("python-ddp.rank0.memtrace"), rank1 = temp("python-ddp.rank1.memtrace");
  CHECK(r.out.find("memlens: 2 ranks recorded: " + rank0 + ", " + rank1) != std::string::npos);
  // Each rank held its own copy of the model: 32*64 + 64 + 64*4 + 4 floats.
  const std::uint64_t parameters = (32 * 64 + 64 + 64 * 4 + 4) * 4;
  CHECK(r.out.find("rank 0 of 2: parameters " + std::to_string(parameters) + " bytes") != std::string::npos);
  for (const auto& [path, rank] : {std::pair{rank0, 0}, std::pair{rank1, 1}}) {
    nlohmann::json t = report_json(path);
    INFO(path);
    CHECK(t["notes"].get<std::string>().find("torch.distributed rank " + std::to_string(rank) + " of 2") != std::string::npos);
    CHECK(t["steps"] == 5);
    std::uint64_t parameter_bytes = 0;
    for (const auto& c : t["devices"][0]["peak_allocated"]["by_category"])
      if (c["category"] == "parameter") parameter_bytes = c["bytes"];
    CHECK(parameter_bytes == parameters);
  }
  // One report, the ranks side by side.
  Run both = run("report " + quote(rank0) + " " + quote(rank1));
  INFO(both.out);
  CHECK(both.status == 0);
  CHECK(both.out.find("=== ranks ===") != std::string::npos);
  CHECK(both.out.find("=== rank 1: ") != std::string::npos);
}

TEST_CASE("a Python console script (#!...python3 on its first line) is recorded as python3 would run it", "[python]") {
  if (!torch_present()) return;
  // As torchrun and other console scripts are installed: an executable whose first line
  // names the interpreter; this one runs the program it is given.
  const std::string launcher = temp("run-program");
  {
    std::ofstream out(launcher);
    out << "#!" << PYTHON3 << "\nimport runpy, sys\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n";
  }
  std::filesystem::permissions(launcher, std::filesystem::perms::owner_all);
  const std::string trace = temp("python-console.memtrace");
  Run r = run("record -o " + quote(trace) + " -- " + quote(launcher) + " " +
              quote(std::string(PYTHON_TESTS_DIR) + "/programs/linear_regression.py"));
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(findings_of(trace) == std::multiset<std::string>{"broadcast at linear_regression.py:22"});
  std::filesystem::remove(launcher);
}

TEST_CASE("recording a Python program: clear errors, no trace left behind", "[python]") {
  if (!torch_present()) return;
  const std::string trace = temp("python-missing.memtrace");
  Run r = run("record -o " + quote(trace) + " -- " + quote(PYTHON3) + " /nonexistent/train.py");
  CHECK(r.status == 2);
  CHECK(r.out.find("python3 -m memlens record: /nonexistent/train.py: no such file") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(trace));
  // The program's own failure is its own: its traceback, its exit status, and the trace
  // up to there.
  Run failing = run("record -o " + quote(trace) + " -- " + quote(PYTHON3) + " -c " +
                    quote("import torch; x = torch.ones(1000); raise ValueError(\"mine\")"));
  INFO(failing.out);
  CHECK(failing.status == 1);
  CHECK(failing.out.find("ValueError: mine") != std::string::npos);
  CHECK(report_json(trace)["devices"][0]["allocs"] == 1);
}

TEST_CASE("an installed memlens records a PyTorch program with its own package, no PYTHONPATH set", "[python][package]") {
  if (!torch_present()) return;
  const std::string prefix = temp("python-prefix");
  std::filesystem::remove_all(prefix);
  Run install = run_command("cmake --install " + quote(MEMLENS_BUILD_DIR) + " --prefix " + quote(prefix));
  INFO(install.out);
  REQUIRE(install.status == 0);
  const std::string package = prefix + "/lib/python3/dist-packages/memlens";
  CHECK(std::filesystem::exists(package + "/__main__.py"));
  CHECK(std::filesystem::exists(package + "/_workers/sitecustomize.py"));
  // The program says where the recorder it runs under comes from: the installed tree.
  const std::string trace = prefix + "/where.memtrace";
  Run r = run_command("env -u PYTHONPATH -u MEMLENS_RECORD_ABI " + quote(prefix + "/bin/memlens") + " record -o " + quote(trace) +
                      " -- " + quote(PYTHON3) +
                      " -c 'import memlens, memlens._abi as a; print(memlens.__file__); print(a.loaded_path())'");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find(package + "/__init__.py\n") != std::string::npos);
  CHECK(r.out.find(prefix + "/lib/libmemlens_record_abi.so\n") != std::string::npos);
  // And python3 -m memlens from there, with the installed package on the path.
  Run m = run_command("env -u MEMLENS_RECORD_ABI PYTHONPATH=" + quote(prefix + "/lib/python3/dist-packages") + " " +
                      quote(PYTHON3) + " -m memlens record -o " + quote(trace) + " " +
                      quote(std::string(PYTHON_TESTS_DIR) + "/programs/linear_regression.py"));
  INFO(m.out);
  CHECK(m.status == 0);
  CHECK(findings_of(trace) == std::multiset<std::string>{"broadcast at linear_regression.py:22"});
  std::filesystem::remove_all(prefix);
}

TEST_CASE("backward-pass memory is sited at the forward line whose node made it", "[python]") {
  if (!torch_present()) return;
  // In the regression, the loss line's backward (pow and sub) makes [100, 100] float
  // gradients, 40,000 bytes each: they belong to line 22, not to `loss.backward()` (24).
  const nlohmann::json t =
      report_json(recorded_python("linear_regression", std::string(PYTHON_TESTS_DIR) + "/programs/linear_regression.py"));
  std::uint64_t loss_line = 0, backward_line = 0;
  for (const auto& s : t["devices"][0]["peak_allocated"]["by_site"]) {
    const std::string site = s["site"];
    if (site.ends_with("linear_regression.py:22")) loss_line = s["bytes"];
    if (site.ends_with("linear_regression.py:24")) backward_line = s["bytes"];
  }
  CHECK(loss_line >= 4 * 40'000);  // the saved difference and three gradients of its shape
  CHECK(backward_line < 1'000);    // only backward()'s seed, a scalar
  std::uint64_t temporaries = 0;
  for (const auto& c : t["devices"][0]["peak_allocated"]["by_category"])
    if (c["category"] == "temporary") temporaries = c["bytes"];
  CHECK(temporaries >= 3 * 40'000);  // born in the backward pass
}

TEST_CASE("each op's output and inputs are recorded with their sizes, strides, dtypes, devices and storages", "[python]") {
  if (!torch_present()) return;
  // The program writes what PyTorch says of each op's tensors; the trace must say the same.
  const std::string truth_path = temp("op-tensors-truth.json"), events = temp("op-tensors.jsonl");
  const std::string& trace =
      recorded("python-op-tensors", PYTHON3, quote(std::string(PYTHON_TESTS_DIR) + "/op_tensors.py") + " " + quote(truth_path));
  Run r = run("export --json " + quote(events) + " " + quote(trace));
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::ifstream truth_in(truth_path);
  REQUIRE(truth_in);
  const nlohmann::json truth = nlohmann::json::parse(truth_in);
  REQUIRE(truth.size() == 3);
  std::vector<nlohmann::json> ops;
  std::ifstream in(events);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json e = nlohmann::json::parse(line);
    if (e["kind"] == "op") ops.push_back(std::move(e));
  }
  // The trace's storage ids are its own: tensors share one exactly where PyTorch's share a
  // storage's address (`base`), and each is compared without it.
  auto tensors_of = [](const nlohmann::json& op) {
    std::vector<nlohmann::json> all{op["output"]};
    for (const auto& t : op["inputs"]) all.push_back(t);
    return all;
  };
  auto without = [](nlohmann::json t, const char* key) {
    t.erase(key);
    return t;
  };
  for (const auto& expected : truth) {
    INFO(expected.dump());
    const std::vector<nlohmann::json> want = tensors_of(expected);
    int matching = 0;
    for (const auto& op : ops) {
      const std::vector<nlohmann::json> got = tensors_of(op);
      if (op["name"] != expected["name"] || got.size() != want.size()) continue;
      bool same = true;
      for (std::size_t i = 0; i < got.size(); ++i) {
        same = same && without(got[i], "storage") == without(want[i], "base") && got[i]["storage"] != 0;
        for (std::size_t j = 0; j < i; ++j)
          same = same && (got[i]["storage"] == got[j]["storage"]) == (want[i]["base"] == want[j]["base"]);
      }
      if (same) ++matching;
    }
    CHECK(matching == 1);
  }
  std::filesystem::remove(truth_path);
  std::filesystem::remove(events);
}

TEST_CASE("memlens.record, step and scope record part of a program", "[python]") {
  if (!torch_present()) return;
  const std::string trace = temp("python-api.memtrace");
  Run r = run_command("PYTHONPATH=" + quote(std::string(SOURCE_DIR) + "/python") +
                      " MEMLENS_RECORD_ABI=" + quote(MEMLENS_RECORD_ABI_LIBRARY) + " " + quote(PYTHON3) + " " +
                      quote(std::string(PYTHON_TESTS_DIR) + "/api.py") + " " + quote(trace));
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("recording: None") != std::string::npos);  // over once the block ends
  const nlohmann::json t = report_json(trace);
  CHECK(t["steps"] == 4);
  const auto& scopes = t["timeline"]["scopes"];
  CHECK(scopes.size() == 4);
  for (const auto& s : scopes) CHECK(s["name"] == "forward");
  // At the peak: `before` (4,000 bytes, adopted as an input), a step's product (4,000) and
  // its sum (4) beside the last step's sum (4): arithmetic on data and no parameter, so
  // inputs too (nothing is left unknown). `after` is not in the trace.
  std::uint64_t input = 0;
  for (const auto& c : t["devices"][0]["peak_allocated"]["by_category"])
    if (c["category"] == "input") input = c["bytes"];
  CHECK(input == 4'000 + 4'000 + 4 + 4);
  CHECK(t["devices"][0]["peak_allocated"]["allocated"] == input);
  CHECK(t["devices"][0]["allocs"] == 1 + 4 * 2);
}

TEST_CASE("on CUDA, the caching allocator's own trace is merged into the recording at its end", "[python]") {
  // A stand-in for torch.cuda (tests/python/allocator_history.py): the glue between the
  // Python recorder and the C ABI's merge needs no GPU, nor PyTorch.
  const std::string trace = temp("python-allocator-history.memtrace");
  const std::string script = quote(std::string(PYTHON_TESTS_DIR) + "/allocator_history.py");
  const std::string env = "PYTHONPATH=" + quote(std::string(SOURCE_DIR) + "/python") +
                          " MEMLENS_RECORD_ABI=" + quote(MEMLENS_RECORD_ABI_LIBRARY) + " ";
  Run r = run_command(env + quote(PYTHON3) + " " + script + " " + quote(trace));
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out == "closed\n");
  nlohmann::json t = report_json(trace);
  REQUIRE(t["devices"].size() == 1);  // the only device with memory
  nlohmann::json cuda = t["devices"][0];
  REQUIRE(cuda["name"] == "cuda:0");
  CHECK(cuda["allocs"] == 2);
  CHECK(cuda["peak_reserved"]["reserved"] == 2 << 20);  // the allocator's segment, not the storage's 1,000 bytes
  CHECK(cuda["peak_allocated"]["allocated"] == 1024 + 4096);
  std::map<std::string, std::uint64_t> by_category;
  for (const auto& c : cuda["peak_allocated"]["by_category"]) by_category[c["category"]] = c["bytes"];
  CHECK(by_category == std::map<std::string, std::uint64_t>{{"activation", 1024}, {"temporary", 4096}});

  // A snapshot that does not read leaves the trace as recorded, and says so.
  r = run_command(env + quote(PYTHON3) + " " + script + " " + quote(trace) + " broken");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.starts_with("memlens: the CUDA caching allocator's trace was not merged: "));
  t = report_json(trace);
  CHECK(t["devices"][0]["peak_reserved"]["reserved"] == 1000);
  std::remove(trace.c_str());
}
