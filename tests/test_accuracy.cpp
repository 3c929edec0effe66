// The accuracy suite: every program of tests/accuracy runs under `memlens record`, and its
// report must hold exactly the findings the manifest lists (kind at line): a listed one
// missing is a miss, any other finding a false alarm. Prints recall and false alarms.
#include <catch2/catch.hpp>
#include <fstream>
#include <iostream>
#include <set>

#include "memlens_cli.hpp"

using namespace memlens::test;

namespace {

// "kind at NAME.cpp:LINE" for each finding of the program's report, recorded with the
// settings `env` ("NAME=VALUE ...", may be empty).
std::multiset<std::string> findings_of(const std::string& name, const std::string& env) {
  const std::string program = std::string(ACCURACY_BIN_DIR) + "/" + name, trace = temp("accuracy-" + name + ".memtrace");
  Run rec = run_command(env + " " + quote(MEMLENS_BIN) + " record -o " + quote(trace) + " -- " + quote(program));
  INFO(rec.out);
  REQUIRE(rec.status == 0);
  nlohmann::json t = report_json(trace);
  std::multiset<std::string> out;
  for (const auto& f : t["findings"]) {
    std::string site = f["site"].is_string() ? f["site"].get<std::string>() : "<unknown>";
    auto slash = site.rfind('/');
    out.insert(f["kind"].get<std::string>() + " at " + (slash == std::string::npos ? site : site.substr(slash + 1)));
  }
  return out;
}

}  // namespace

TEST_CASE("accuracy suite: every planted bug found at its line, no finding on correct code", "[accuracy]") {
  std::ifstream in(std::string(ACCURACY_DIR) + "/manifest.json");
  REQUIRE(in);
  nlohmann::json manifest = nlohmann::json::parse(in);
  std::size_t expected = 0, found = 0, false_alarms = 0, programs = 0, clean = 0;
  std::set<std::string> names, twins;
  for (const auto& p : manifest["programs"]) {
    std::string name = p["program"];
    names.insert(name);
    if (p.contains("twin")) twins.insert(p["twin"].get<std::string>());
    ++programs;
    std::multiset<std::string> got = findings_of(name, p.value("env", ""));
    clean += p["expect"].empty();
    for (const auto& e : p["expect"]) {
      // The manifest's line is the one the source marks "// BUG: kind".
      std::ifstream src(std::string(ACCURACY_DIR) + "/" + name + ".cpp");
      std::string line;
      for (int n = 0; n < e["line"].get<int>() && std::getline(src, line); ++n) {
      }
      INFO(name << ":" << e["line"] << ": " << line);
      CHECK(line.find("// BUG: " + e["kind"].get<std::string>()) != std::string::npos);
      std::string want = e["kind"].get<std::string>() + " at " + name + ".cpp:" + std::to_string(e["line"].get<int>());
      ++expected;
      auto it = got.find(want);
      if (it == got.end()) {
        std::cout << "accuracy: MISSED " << want << "\n";
        continue;
      }
      ++found;
      got.erase(it);
    }
    for (const auto& extra : got) std::cout << "accuracy: FALSE ALARM in " << name << ": " << extra << "\n";
    false_alarms += got.size();
  }
  std::cout << "accuracy: " << programs << " programs (" << clean << " clean), recall " << found << "/" << expected
            << ", false alarms " << false_alarms << "\n";
  CHECK(programs >= 20);
  for (const auto& t : twins) CHECK(names.count(t) == 1);  // every bug's clean twin is in the suite
  CHECK(twins.size() * 2 <= programs);
  CHECK(found == expected);
  CHECK(false_alarms == 0);
}
