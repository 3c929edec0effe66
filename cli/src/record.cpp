#include "record.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "exit_codes.hpp"

namespace memlens::cli {

namespace {

// The file a command's word names: a path as it is, a bare program name where PATH finds it.
std::filesystem::path named_file(const std::string& word, bool program) {
  if (!program || word.find('/') != std::string::npos) return word;
  const char* path = std::getenv("PATH");
  for (std::string_view dirs = path ? path : ""; !dirs.empty();) {
    const std::size_t end = std::min(dirs.find(':'), dirs.size());
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(0, end)) / word;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    dirs.remove_prefix(std::min(end + 1, dirs.size()));
  }
  return {};
}

}  // namespace

void refuse_trace_over_command(const std::string& trace, const std::vector<std::string>& command) {
  for (std::size_t i = 0; i < command.size(); ++i) {
    std::error_code ec;
    const std::filesystem::path file = named_file(command[i], i == 0);
    if (!file.empty() && std::filesystem::equivalent(trace, file, ec))
      throw UsageError("record: the trace " + trace + " is " + (i == 0 ? "the program" : "an argument of the program") + " (" +
                       command[i] + "): give the trace a file of its own");
  }
}

std::string trace_path(const RecordRequest& r) {
  return r.output.empty() ? "memlens-" + std::filesystem::path(r.command[0]).filename().string() + ".memtrace" : r.output;
}

RecordOutcome record_program(const RecordRequest& r) {
  if (r.command.empty()) throw UsageError("record: no program given (usage: memlens record [-o FILE] -- PROGRAM ARGS...)");
  RecordOutcome out;
  out.trace = trace_path(r);
  // The trace must be writable before the program runs for minutes. A file that was there
  // is left as it is if the program cannot even start.
  std::error_code ec;
  const bool existed = std::filesystem::exists(out.trace, ec);
  out.created = !existed;
  // A trace is read back after the run: a device or a pipe (/dev/full, /dev/stdout) cannot be.
  if (existed && !std::filesystem::is_regular_file(out.trace, ec))
    throw UsageError(out.trace + ": not a regular file: give a file to write the trace to");
  int probe = ::open(out.trace.c_str(), O_WRONLY | O_CREAT, 0644);
  if (probe < 0) throw UsageError(out.trace + ": cannot write the trace: " + std::strerror(errno));
  ::close(probe);

  // A pipe closed on exec tells the parent whether exec failed, and why.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw UsageError(std::string("record: pipe: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) throw UsageError(std::string("record: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    if (r.cupti_library.empty()) {
      setenv("MEMLENS_TRACE", out.trace.c_str(), 1);
    } else {
      setenv("CUDA_INJECTION64_PATH", r.cupti_library.c_str(), 1);
      setenv("MEMLENS_CUPTI_TRACE", out.trace.c_str(), 1);
    }
    if (r.stacks) setenv("MEMLENS_STACKS", "1", 1);
    if (r.stack_depth > 0) setenv("MEMLENS_STACK_DEPTH", std::to_string(r.stack_depth).c_str(), 1);
    if (!r.device.empty()) setenv("MEMLENS_DEVICE", r.device.c_str(), 1);
    for (const auto& [name, value] : r.environment) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : r.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    int err = errno;
    (void)!write(fds[1], &err, sizeof err);
    _exit(127);
  }
  ::close(fds[1]);
  int exec_errno = 0;
  bool exec_failed = read(fds[0], &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno);
  ::close(fds[0]);
  if (!exec_failed && r.started) r.started(pid);
  // Ctrl-C reaches the program (same process group); memlens waits for it to finish.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (exec_failed) {
    if (!existed) std::filesystem::remove(out.trace, ec);
    throw UsageError("record: cannot run " + r.command[0] + ": " + std::strerror(exec_errno));
  }
  if (WIFEXITED(status)) {
    out.exit_status = WEXITSTATUS(status);
    out.how = "exit " + std::to_string(out.exit_status);
  } else if (WIFSIGNALED(status)) {
    out.exit_status = 128 + WTERMSIG(status);
    out.how = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return out;
}

}  // namespace memlens::cli
