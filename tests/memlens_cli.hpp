#pragma once
// Driving the real `memlens` binary from tests: run it, record a sample once per test
// run, read its JSON report.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace memlens::test {

struct Run {
  int status = -1;
  std::string out;  // stdout and stderr together
};

inline std::string quote(const std::string& s) { return "'" + s + "'"; }

// A shell command line, its output and exit status.
inline Run run_command(const std::string& command_line) {
  Run r;
  std::string cmd = command_line + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

inline Run run(const std::string& args) { return run_command(quote(MEMLENS_BIN) + " " + args); }

inline std::string temp(const std::string& name) { return "/tmp/memlens-cli-" + std::to_string(::getpid()) + "-" + name; }

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `memlens record` of a program, once per test run under `name`.
inline const std::string& recorded(const std::string& name, const std::string& program, const std::string& args) {
  static std::map<std::string, std::string> traces;
  auto it = traces.find(name);
  if (it != traces.end()) return it->second;
  std::string path = temp(name + ".memtrace");
  Run r = run("record -o " + quote(path) + " -- " + quote(program) + " " + args);
  INFO(r.out);
  REQUIRE(r.status == 0);
  return traces[name] = path;
}

// The trace object of `memlens report --format json`.
inline nlohmann::json report_json(const std::string& trace, const std::string& extra = "") {
  Run r = run("report --format json " + extra + " " + quote(trace));
  INFO(r.out);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out)["traces"][0];
}

}  // namespace memlens::test
