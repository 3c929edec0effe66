// The real `memlens` binary on the real samples, end to end: record, report, check,
// baseline, diff, export, replay, the CMake helper, and bad input.
#include <filesystem>
#include <memlens/common/byte_text.hpp>

#include "memlens_cli.hpp"

using namespace memlens::test;

namespace {

const std::string& lr() { return recorded("lr", LINEAR_REGRESSION_BIN, "100"); }
const std::string& lr_fixed() { return recorded("lr-fixed", LINEAR_REGRESSION_FIXED_BIN, "100"); }
const std::string& leak() { return recorded("leak", LEAK_LOSS_HISTORY_BIN, "12"); }
const std::string& leak_fixed() { return recorded("leak-fixed", LEAK_LOSS_HISTORY_BIN, "12 --fixed"); }

}  // namespace

TEST_CASE("memlens: --help on every command, exit 2 with one line on bad usage", "[cli]") {
  Run top = run("--help");
  CHECK(top.status == 0);
  for (const char* sub : {"record", "report", "summary", "peak", "leaks", "broadcast", "contiguity", "transfers", "churn",
                          "fragmentation", "timeline", "diff", "export", "replay", "check", "baseline", "view"}) {
    CHECK(top.out.find(sub) != std::string::npos);
    Run h = run(std::string(sub) + " --help");
    INFO(sub);
    CHECK(h.status == 0);
    CHECK(h.out.find("Usage") != std::string::npos);
  }
  Run none = run("");
  CHECK(none.status == 2);
  Run bad = run("report --frobnicate x");
  CHECK(bad.status == 2);
  CHECK(std::count(bad.out.begin(), bad.out.end(), '\n') == 1);
  CHECK(bad.out.find("memlens report: ") == 0);
}

TEST_CASE("memlens record: the trace, where it went and a three-line summary", "[cli]") {
  std::string path = temp("record.memtrace");
  Run r = run("record -o " + quote(path) + " -- " + quote(LINEAR_REGRESSION_BIN) + " 5");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("memlens: recorded " + std::string(LINEAR_REGRESSION_BIN) + " (exit 0) to " + path) != std::string::npos);
  CHECK(r.out.find("memlens: peak cpu ") != std::string::npos);
  CHECK(r.out.find("memlens: findings: 2 broadcast; see `memlens report " + path + "`") != std::string::npos);
  CHECK(std::filesystem::file_size(path) > 0);
  Run missing = run("record -o " + quote(path) + " -- /no/such/program");
  CHECK(missing.status == 2);
  CHECK(missing.out == "memlens: record: cannot run /no/such/program: No such file or directory\n");
#ifdef MEMLENS_HAVE_CUPTI
  // --cupti: the driver is told to load the collector, which writes the trace.
  Run cupti = run("record --cupti -o " + quote(temp("env.memtrace")) + " -- /usr/bin/env");
  CHECK(cupti.out.find("CUDA_INJECTION64_PATH=") != std::string::npos);
  CHECK(cupti.out.find("libmemlens_cupti.so") != std::string::npos);
  CHECK(cupti.out.find("MEMLENS_CUPTI_TRACE=" + temp("env.memtrace")) != std::string::npos);
  CHECK(cupti.status == 2);  // env uses no CUDA: no trace
#endif
  Run not_linked = run("record -o " + quote(temp("true.memtrace")) + " -- /bin/true");
  CHECK(not_linked.status == 2);
  CHECK(not_linked.out.find("wrote no trace to") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("memlens report: the seed's linear regression gets a broadcast finding at its loss line", "[cli]") {
  Run doc = run("report --format json " + quote(lr()));
  CHECK(nlohmann::json::parse(doc.out)["schema_version"] == 1);
  nlohmann::json t = report_json(lr());
  REQUIRE(t["findings"].size() >= 1);
  const auto& f = t["broadcast"]["findings"][0];
  CHECK(f["site"].get<std::string>().ends_with("samples/linear_regression.cpp:31"));  // loss = (y_pred - y).pow(2).mean()
  CHECK(f["op"] == "sub");
  CHECK(f["inputs"] == nlohmann::json::parse("[[100], [100, 1]]"));
  CHECK(f["output"] == nlohmann::json::parse("[100, 100]"));
  CHECK(f["bytes"] == 40000);
  CHECK(f["count"] == 100);
  CHECK(t["findings"][0]["kind"] == "broadcast");

  Run text = run("broadcast " + quote(lr()));
  CHECK(text.status == 0);
  CHECK(text.out.find("sub  [100] [100, 1]  [100, 100]") != std::string::npos);
}

TEST_CASE("memlens report: the corrected twins produce no finding at all", "[cli]") {
  CHECK(report_json(lr_fixed())["findings"].empty());
  CHECK(report_json(leak_fixed())["findings"].empty());
  Run s = run("summary " + quote(lr_fixed()));
  CHECK(s.out.find("no findings") != std::string::npos);
}

TEST_CASE("memlens leaks: a loss kept with its graph grows at its line, step after step", "[cli]") {
  nlohmann::json j = report_json(leak(), "--only leaks");
  const auto& g = j["leaks"]["growth"];
  REQUIRE(g.size() >= 1);
  CHECK(g[0]["site"].get<std::string>().ends_with("samples/leak_loss_history.cpp:41"));
  // 12 steps: the first step's memory is set-up and the second's is not yet a survivor at its
  // own boundary, so 10 boundaries see survivors of earlier steps.
  CHECK(g[0]["steps_observed"] == 10);
  CHECK(g[0]["bytes_per_step"].get<double>() > 200 * 1024);
  CHECK(j["steps"] == 12);
}

TEST_CASE("memlens check: passes and fails as it should, with JUnit XML", "[cli]") {
  Run leaky = run("check " + quote(leak()) + " --no-leaks");
  CHECK(leaky.status == 1);
  CHECK(leaky.out.find("FAIL no-leaks: 1 leak finding") != std::string::npos);
  CHECK(leaky.out.find("growth at ") != std::string::npos);
  CHECK(leaky.out.find("leak_loss_history.cpp:41") != std::string::npos);
  CHECK(leaky.out.find("memlens check: FAILED (1 checks)") != std::string::npos);
  Run clean = run("check " + quote(leak_fixed()) + " --no-leaks --max-peak 64MiB");
  CHECK(clean.status == 0);
  CHECK(clean.out.find("memlens check: passed (2 checks)") != std::string::npos);

  Run broadcast = run("check " + quote(lr()) + " --no-broadcast --max-peak 100KiB");
  CHECK(broadcast.status == 1);
  CHECK(broadcast.out.find("FAIL no-broadcast: 2 broadcast findings") != std::string::npos);
  CHECK(broadcast.out.find(
            "FAIL max-peak: peak allocated on sim:0 is 202.00 KiB, 102.00 KiB (102.0%) over the limit of 100.00 KiB") !=
        std::string::npos);

  std::string xml = temp("junit.xml");
  Run j = run("check " + quote(lr()) + " --no-broadcast --max-peak 1MiB --junit " + quote(xml));
  CHECK(j.status == 1);
  std::string validate = "xmllint --noout --schema " + quote(JUNIT_XSD) + " " + quote(xml) + " 2>&1";
  CHECK(std::system(validate.c_str()) == 0);
  std::string x = slurp(xml);
  CHECK(x.find("tests=\"2\" failures=\"1\"") != std::string::npos);
  std::filesystem::remove(xml);
}

TEST_CASE("memlens baseline: exact on sim; a 10% larger peak fails a 5% tolerance", "[cli]") {
  std::string base = temp("base.json");
  Run b = run("baseline " + quote(lr()) + " -o " + quote(base));
  INFO(b.out);
  REQUIRE(b.status == 0);
  Run same = run("check " + quote(lr()) + " --baseline " + quote(base));
  CHECK(same.status == 0);
  // The same program again: sim is deterministic, so the peak is the same to the byte.
  std::string again = temp("lr-again.memtrace");
  REQUIRE(run("record -o " + quote(again) + " -- " + quote(LINEAR_REGRESSION_BIN) + " 100").status == 0);
  auto j = nlohmann::json::parse(slurp(base));
  CHECK(report_json(again)["devices"][1]["peak_allocated"]["allocated"] == j["peak_allocated"]);
  // A baseline 10% below today's peak: today is 10% larger.
  j["peak_allocated"] = static_cast<std::uint64_t>(j["peak_allocated"].get<double>() / 1.10);
  std::ofstream(base) << j.dump();
  Run tight = run("check " + quote(lr()) + " --baseline " + quote(base) + " --tolerance 5%");
  CHECK(tight.status == 1);
  CHECK(tight.out.find("FAIL baseline-peak: peak allocated on sim:0 is 202.00 KiB against a baseline of ") != std::string::npos);
  CHECK(tight.out.find("beyond the tolerance of 5%") != std::string::npos);
  Run loose = run("check " + quote(lr()) + " --baseline " + quote(base) + " --tolerance 15%");
  CHECK(loose.status == 0);
  std::filesystem::remove(base);
  std::filesystem::remove(again);
}

TEST_CASE("memlens diff, export, replay and several ranks", "[cli]") {
  Run d = run("diff " + quote(lr()) + " " + quote(lr_fixed()));
  CHECK(d.status == 0);
  CHECK(d.out.find("PEAKS") != std::string::npos);
  CHECK(d.out.find("broadcast") != std::string::npos);

  std::string chrome = temp("chrome.json");
  Run e = run("export " + quote(lr()) + " --chrome " + quote(chrome));
  CHECK(e.status == 0);
  CHECK(nlohmann::json::parse(slurp(chrome)).contains("traceEvents"));
  std::filesystem::remove(chrome);

  Run r = run("replay " + quote(lr()) + " --alloc-conf expandable_segments:True");
  CHECK(r.status == 0);
  CHECK(r.out.find("replaying ") == 0);
  CHECK(r.out.find("of sim:0 from") != std::string::npos);
  CHECK(r.out.find("expandable_segments:True") != std::string::npos);

  Run ranks = run("report --only summary " + quote(lr()) + " " + quote(lr_fixed()));
  CHECK(ranks.status == 0);
  CHECK(ranks.out.find("=== ranks ===") != std::string::npos);
  CHECK(ranks.out.find("=== rank 1: " + lr_fixed() + " ===") != std::string::npos);
}

TEST_CASE("memlens: bad input is one line and exit 2", "[cli]") {
  Run missing = run("report /no/such.memtrace");
  CHECK(missing.status == 2);
  CHECK(std::count(missing.out.begin(), missing.out.end(), '\n') == 1);

  std::string junk = temp("junk.memtrace");
  std::ofstream(junk) << "not a trace at all";
  Run bad = run("report " + quote(junk));
  CHECK(bad.status == 2);
  CHECK(bad.out == "memlens: " + junk + ": not a memlens trace (bad magic)\n");

  Run size = run("check " + quote(lr()) + " --max-peak 12XB");
  CHECK(size.status == 2);
  CHECK(size.out == "memlens: --max-peak: invalid byte size '12XB' (unknown unit 'XB')\n");

  std::ofstream(junk) << "{ not json";
  Run base = run("check " + quote(lr()) + " --baseline " + quote(junk));
  CHECK(base.status == 2);
  CHECK(base.out == "memlens: " + junk + ": not a memlens baseline: not valid JSON\n");

  Run nothing = run("check " + quote(lr()));
  CHECK(nothing.status == 2);

  // Truncated: a report of what was recovered, with a warning.
  std::string whole = slurp(lr());
  std::ofstream(junk, std::ios::binary) << whole.substr(0, whole.size() * 2 / 3);
  Run cut = run("summary " + quote(junk));
  CHECK(cut.status == 0);
  CHECK(cut.out.find("memlens: warning: ") == 0);
  CHECK(cut.out.find("footer") != std::string::npos);
  std::filesystem::remove(junk);
}

TEST_CASE("memlens_add_memory_test works from a project outside memlens", "[cli]") {
  std::string dir = temp("external");
  std::string configure = "cmake -S " + quote(EXTERNAL_PROJECT_DIR) + " -B " + quote(dir) +
                          " -Dmemlens_DIR=" + quote(MEMLENS_BUILD_DIR) + " -DSAMPLE=" + quote(LINEAR_REGRESSION_BIN) +
                          " > /dev/null";
  REQUIRE(std::system(configure.c_str()) == 0);
  std::string out = dir + "/ctest.log";
  std::system(("ctest --test-dir " + quote(dir) + " > " + quote(out) + " 2>&1").c_str());
  std::string log = slurp(out);
  INFO(log);
  CHECK(log.find("lr_fits ..........................   Passed") != std::string::npos);
  CHECK(log.find("lr_over_peak .....................***Failed") != std::string::npos);
  CHECK(log.find("lr_broadcast .....................***Failed") != std::string::npos);
  CHECK(log.find("33% tests passed, 2 tests failed out of 3") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an outside project builds against an installed memlens, with CMake and with pkg-config", "[cli][package]") {
#ifdef MEMLENS_SANITIZED
  WARN("skipped: this build is sanitized, and an outside project would need the same runtime flags");
  return;
#endif
  const std::string root = temp("package");
  const std::string prefix = root + "/prefix", build = root + "/build";
  std::filesystem::remove_all(root);
  Run install = run_command("cmake --install " + quote(MEMLENS_BUILD_DIR) + " --prefix " + quote(prefix));
  INFO(install.out);
  REQUIRE(install.status == 0);
  // The installed tree, not the build tree, from here on.
  for (const char* f :
       {"bin/memlens", "include/memlens/runtime.hpp", "include/memlens/recorder/recorder.hpp", "lib/libmemlens_runtime.a",
        "lib/libmemlens_recorder.a", "lib/cmake/memlens/memlensConfig.cmake", "lib/cmake/memlens/memlensConfigVersion.cmake",
        "lib/cmake/memlens/memlensTargets.cmake", "lib/pkgconfig/memlens.pc"})
    CHECK(std::filesystem::exists(prefix + "/" + f));
  const std::string memlens = quote(prefix + "/bin/memlens");
  Run configure = run_command("cmake -S " + quote(OUTSIDE_PROJECT_DIR) + " -B " + quote(build) +
                              " -DCMAKE_PREFIX_PATH=" + quote(prefix) + " -DCMAKE_BUILD_TYPE=Release");
  INFO(configure.out);
  REQUIRE(configure.status == 0);
  Run compile = run_command("cmake --build " + quote(build) + " -j2");
  INFO(compile.out);
  REQUIRE(compile.status == 0);

  // Recorded and reported by the installed command: the program's 7 steps are in the trace.
  const std::string trace = root + "/train.memtrace";
  Run rec =
      run_command("MEMLENS_SIM_MEMORY=1GiB " + memlens + " record -o " + quote(trace) + " -- " + quote(build + "/train") + " 7");
  INFO(rec.out);
  REQUIRE(rec.status == 0);
  CHECK(rec.out.find("train: 7 steps") != std::string::npos);
  Run rep = run_command(memlens + " report --format json " + quote(trace));
  REQUIRE(rep.status == 0);
  nlohmann::json r = nlohmann::json::parse(rep.out)["traces"][0];
  CHECK(r["steps"] == 7);
  CHECK(r["devices"].size() >= 1);

  // Its CTest memory gate, from the installed package's helper.
  Run ctest = run_command("MEMLENS_SIM_MEMORY=1GiB ctest --test-dir " + quote(build));
  INFO(ctest.out);
  CHECK(ctest.out.find("train_fits .......................   Passed") != std::string::npos);
  CHECK(ctest.out.find("train_over_peak ..................***Failed") != std::string::npos);

  // Without CMake: pkg-config gives the flags.
  const std::string pc = "PKG_CONFIG_PATH=" + quote(prefix + "/lib/pkgconfig") + " pkg-config";
  Run version = run_command(pc + " --modversion memlens");
  CHECK(version.out == "0.2.0\n");
  const std::string plain = root + "/train_pc";
  Run gxx = run_command("c++ -O1 " + quote(std::string(OUTSIDE_PROJECT_DIR) + "/train.cpp") + " -o " + quote(plain) + " $(" + pc +
                        " --cflags --libs memlens)");
  INFO(gxx.out);
  REQUIRE(gxx.status == 0);
  Run rec2 = run_command("MEMLENS_SIM_MEMORY=1GiB " + memlens + " record -o " + quote(root + "/pc.memtrace") + " -- " +
                         quote(plain) + " 3");
  INFO(rec2.out);
  CHECK(rec2.status == 0);
  std::filesystem::remove_all(root);
}

TEST_CASE("cpack makes a .deb that puts the commands, headers, libraries and CMake package under /usr", "[cli][package]") {
#ifdef MEMLENS_SANITIZED
  WARN("skipped: a sanitized build is not packaged");
  return;
#endif
  if (run_command("command -v dpkg-deb").status != 0) {
    WARN("skipped: dpkg-deb is not installed");
    return;
  }
  const std::string out = temp("deb");
  std::filesystem::remove_all(out);
  Run pack =
      run_command("cpack -G DEB --config " + quote(std::string(MEMLENS_BUILD_DIR) + "/CPackConfig.cmake") + " -B " + quote(out));
  INFO(pack.out);
  REQUIRE(pack.status == 0);
  const std::string deb = out + "/memlens_0.2.0_amd64.deb";
  REQUIRE(std::filesystem::exists(deb));
  Run list = run_command("dpkg-deb -c " + quote(deb));
  for (const char* f :
       {"./usr/bin/memlens", "./usr/include/memlens/runtime.hpp", "./usr/include/memlens/recorder/recorder.hpp",
        "./usr/lib/libmemlens_runtime.a", "./usr/lib/libmemlens_recorder.a", "./usr/lib/cmake/memlens/memlensConfig.cmake",
        "./usr/lib/cmake/memlens/memlensConfigVersion.cmake", "./usr/lib/pkgconfig/memlens.pc"}) {
    INFO(f);
    CHECK(list.out.find(std::string(" ") + f + "\n") != std::string::npos);
  }
  Run info = run_command("dpkg-deb -f " + quote(deb) + " Package Version Depends");
  CHECK(info.out.find("Package: memlens\nVersion: 0.2.0\n") == 0);
  CHECK(info.out.find("libzstd-dev") != std::string::npos);  // what a program built against it needs
  std::filesystem::remove_all(out);
}

TEST_CASE("check --format github annotates the source lines; --format markdown is a job summary", "[cli]") {
  // Run from the checkout, as a workflow does: paths come out relative to it.
  const std::string in_tree = "cd " + quote(SOURCE_DIR) + " && " + quote(MEMLENS_BIN) + " check " + quote(lr());
  Run gh = run_command(in_tree + " --max-peak 1KiB --no-broadcast --format github");
  INFO(gh.out);
  CHECK(gh.status == 1);
  std::istringstream lines(gh.out);
  std::vector<std::string> got;
  for (std::string l; std::getline(lines, l);) got.push_back(l);
  REQUIRE(got.size() == 5);
  // A failed limit at the top site at the peak; its details on further lines (%0A).
  CHECK(got[0].starts_with("::error file=samples/linear_regression.cpp,line="));
  CHECK(got[0].find(",title=memlens check max-peak::peak allocated on sim:0 is ") != std::string::npos);
  CHECK(got[0].find("over the limit of 1.00 KiB%0A") != std::string::npos);
  CHECK(got[0].find("(20") != std::string::npos);  // a percentage: '%' escaped as %25
  CHECK(got[0].find("%25)") != std::string::npos);
  CHECK(
      got[1].starts_with("::error title=memlens check no-broadcast::2 broadcast findings%0Abroadcast at "
                         "samples/linear_regression.cpp:31: sub: "));
  // Each finding at its line: the broadcasts at the loss (31) and the final loss (45).
  CHECK(got[2].starts_with("::warning file=samples/linear_regression.cpp,line=31,title=memlens broadcast::sub: "));
  CHECK(got[3].starts_with("::warning file=samples/linear_regression.cpp,line=45,title=memlens broadcast::sub: "));
  CHECK(got[4] == "memlens check: FAILED (2 checks)");

  Run md = run_command(in_tree + " --max-peak 1GiB --no-broadcast --format markdown");
  INFO(md.out);
  CHECK(md.status == 1);
  CHECK(md.out.starts_with("### memlens check: failed\n\n`"));
  CHECK(md.out.find("1 of 2 checks passed\n\n| check | result | figure |\n|---|---|---|\n| max-peak | pass | ") !=
        std::string::npos);
  CHECK(md.out.find("| no-broadcast | **FAIL** | 2 broadcast findings |\n") != std::string::npos);
  CHECK(md.out.find("\n**no-broadcast**, where:\n\n- broadcast at samples/linear_regression.cpp:31: sub: ") != std::string::npos);
  CHECK(run(std::string("check ") + quote(lr()) + " --max-peak 1GiB --format yaml").status == 2);
}

TEST_CASE("history: runs across commits, the commit that moved memory most, and check --against-history", "[cli][history]") {
  auto bytes_text = [](std::uint64_t b) { return memlens::format_bytes(static_cast<std::int64_t>(b)); };
  const std::string db = temp("history.sqlite");
  std::filesystem::remove(db);
  // The same program leaking more with more steps: three commits, peaks rising.
  const std::string runs[] = {recorded("hist-4", LEAK_LOSS_HISTORY_BIN, "4"), recorded("hist-8", LEAK_LOSS_HISTORY_BIN, "8"),
                              recorded("hist-12", LEAK_LOSS_HISTORY_BIN, "12")};
  std::vector<std::uint64_t> peaks;
  for (const auto& t : runs) peaks.push_back(report_json(t)["devices"][1]["peak_allocated"]["allocated"].get<std::uint64_t>());
  REQUIRE(report_json(runs[0])["devices"][1]["name"] == "sim:0");
  REQUIRE(peaks[0] < peaks[1]);
  REQUIRE(peaks[1] < peaks[2]);

  // Before any run: the check has nothing to compare with and passes, saying so.
  Run first = run("check " + quote(runs[0]) + " --against-history --db " + quote(db));
  CHECK(first.status == 0);
  CHECK(first.out.find("PASS history: no earlier run of ") != std::string::npos);
  const char* commits[] = {"aaaa111", "bbbb222"};
  for (int i = 0; i < 2; ++i) {
    Run add = run("history add " + quote(runs[i]) + " --commit " + commits[i] + " --db " + quote(db));
    INFO(add.out);
    CHECK(add.status == 0);
    CHECK(add.out.find("(run " + std::to_string(i + 1) + " of ") != std::string::npos);
  }
  // The third commit rises above the median of the two before it: the gate fails.
  Run gate = run("check " + quote(runs[2]) + " --against-history --db " + quote(db));
  INFO(gate.out);
  CHECK(gate.status == 1);
  CHECK(gate.out.find("FAIL history: peak allocated " + bytes_text(peaks[2]) + " against a median of " + bytes_text(peaks[1]) +
                      " over the last 2 runs") != std::string::npos);
  CHECK(run("check " + quote(runs[0]) + " --against-history --db " + quote(db)).status == 0);
  REQUIRE(run("history add " + quote(runs[2]) + " --commit cccc333 --db " + quote(db)).status == 0);

  Run show = run("history show --db " + quote(db));
  INFO(show.out);
  CHECK(show.status == 0);
  CHECK(show.out.find(": 3 runs\n") != std::string::npos);
  for (int i = 0; i < 3; ++i) CHECK(show.out.find(bytes_text(peaks[static_cast<std::size_t>(i)])) != std::string::npos);
  // Which step between runs moved peak allocated most, computed here from the reports.
  bool second_step = peaks[2] - peaks[1] > peaks[1] - peaks[0];
  std::int64_t moved = static_cast<std::int64_t>(second_step ? peaks[2] - peaks[1] : peaks[1] - peaks[0]);
  CHECK(show.out.find(std::string("most moved by ") + (second_step ? "cccc333" : "bbbb222") + ": peak allocated +" +
                      bytes_text(static_cast<std::uint64_t>(moved))) != std::string::npos);
  Run svg = run("history show --format svg --db " + quote(db));
  CHECK(svg.out.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(std::count(svg.out.begin(), svg.out.end(), '\n') > 5);
  CHECK(svg.out.find("<polyline") != std::string::npos);

  // Not a history: one line, exit 2.
  const std::string junk = temp("junk.sqlite");
  std::ofstream(junk) << "not a database at all, just some text long enough to have a header";
  Run bad = run("history show --db " + quote(junk));
  CHECK(bad.status == 2);
  CHECK(bad.out == "memlens: " + junk + ": file is not a database\n");
  CHECK(run("history add " + quote(runs[0]) + " --db " + quote(db)).status == 2);  // no --commit
  std::filesystem::remove(junk);
  std::filesystem::remove(db);
}

TEST_CASE("memory a static cache holds until teardown is a leak: the run ends when main returns", "[cli]") {
  // The cache is a function-local static made during main, so static destruction frees it
  // before the recorder's own statics go: recorded, it would look freed.
  const std::string leaky = recorded("static-cache", STATIC_CACHE_BIN, "");
  nlohmann::json r = report_json(leaky);
  std::vector<std::string> leaks;
  for (const auto& f : r["findings"])
    if (f["kind"] == "leak") leaks.push_back(f["site"]);
  REQUIRE(leaks.size() == 1);
  CHECK(leaks[0].ends_with("tests/programs/static_cache.cpp:24"));  // the cache's emplace
  // 6 steps of one 256x64 float tensor each; the first, made before the first step
  // boundary, counts as set-up: 5 leaked.
  CHECK(r["leaks"]["leaked_bytes"] == 5 * 256 * 64 * 4);
  // The twin empties its cache before main returns: nothing found.
  CHECK(report_json(recorded("static-cache-bounded", STATIC_CACHE_BIN, "--bounded"))["findings"].empty());
}

TEST_CASE("a device setting a program makes after its device exists is said to come too late", "[cli]") {
  // late_sim_memory sets MEMLENS_SIM_MEMORY=64MiB in main; recorded, the device was made
  // before main with the setting of the environment (none here: 16 GiB).
  const std::string trace = temp("late-sim-memory.memtrace");
  Run r = run_command("env -u MEMLENS_SIM_MEMORY " + quote(MEMLENS_BIN) + " record -o " + quote(trace) + " -- " +
                      quote(LATE_SIM_MEMORY_BIN));
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("memlens: MEMLENS_SIM_MEMORY=64MiB came too late: the simulated device was made before it, with 16.00 GiB "
                   "(under `memlens record` devices exist before main); set it where the program starts\n") != std::string::npos);
  // Set where the program starts, it is taken, and nothing is said.
  r = run_command("MEMLENS_SIM_MEMORY=64MiB " + quote(MEMLENS_BIN) + " record -o " + quote(trace) + " -- " +
                  quote(LATE_SIM_MEMORY_BIN));
  CHECK(r.status == 0);
  CHECK(r.out.find("came too late") == std::string::npos);
  std::filesystem::remove(trace);
}

TEST_CASE("a program built without line tables: the report says why its sites are unknown", "[cli]") {
  // static_cache built as a Release build is, without -g: no site has a file or a line.
  const std::string bare = recorded("static-cache-no-lines", STATIC_CACHE_NO_LINES_BIN, "");
  nlohmann::json r = report_json(bare);
  const std::string why =
      " are <unknown>: no line tables (built without -g); build with -g, e.g. CMAKE_BUILD_TYPE=RelWithDebInfo";
  CHECK(r["sites_note"] == std::string("sites in ") + STATIC_CACHE_NO_LINES_BIN + why);
  for (const auto& f : r["findings"]) CHECK(f["site"].is_null());
  Run text = run("report --only summary " + quote(bare));
  CHECK(text.status == 0);
  // The text report wraps long lines: compare with runs of white space as one.
  auto words = [](const std::string& s) {
    std::istringstream in(s);
    std::string out;
    for (std::string w; in >> w;) out += w + " ";
    return out;
  };
  CHECK_THAT(words(text.out), Catch::Contains(words(std::string("note: sites in ") + STATIC_CACHE_NO_LINES_BIN + why)));
  // The same program with line tables: its sites are lines, and there is nothing to explain.
  CHECK(report_json(recorded("static-cache", STATIC_CACHE_BIN, ""))["sites_note"] == "");
}
