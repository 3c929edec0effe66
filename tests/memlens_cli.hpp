#pragma once
// Driving the real `memlens` binary from tests: run it, record a sample once per test
// run, read its JSON report.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

// A command run in the background (found on PATH), its stdout and stderr into `output`.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::string& output) : output_(output) {
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1), dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
  }
  ~Background() {
    if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
  }
  // Its exit status once it ends, -1 if it runs past `limit`.
  int wait(std::chrono::seconds limit) {
    for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string output() const { return slurp(output_); }
  // Waits (up to `limit`) until its output holds `text`.
  bool wait_for_output(const std::string& text, std::chrono::seconds limit) const {
    for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
      if (output().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  std::string output_;
  pid_t pid_ = -1;
};

}  // namespace memlens::test
