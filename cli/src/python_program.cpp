#include "python_program.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "exit_codes.hpp"
#include "installed_file.hpp"

namespace memlens::cli {

bool is_python(const std::string& program) {
  static const std::regex name("python[0-9.]*(-dbg)?");
  return std::regex_match(std::filesystem::path(program).filename().string(), name);
}

namespace {

// Where execvp would find `program`: itself when it names a path, else the first
// executable of that name on PATH; "" when none.
std::string on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    std::string candidate = (folder.empty() ? "." : folder) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The index of the first word after the interpreter and its own options (those that
// take a value take the next word with them): the script, `-m`, `-c`, `--` or the end.
std::size_t interpreter_options_end(const std::vector<std::string>& command) {
  std::size_t i = 1;
  for (; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a.size() < 2 || a[0] != '-' || a == "-m" || a == "-c" || a == "--") break;
    if ((a == "-X" || a == "-W") && i + 1 < command.size()) ++i;
  }
  return i;
}

}  // namespace

std::string python_program_name(const std::vector<std::string>& command) {
  std::size_t i = interpreter_options_end(command);
  if (i < command.size() && command[i] == "--") ++i;
  if (i >= command.size() || command[i] == "-c") return "python";
  if (command[i] == "-m") return i + 1 < command.size() ? command[i + 1] : "python";
  return std::filesystem::path(command[i]).stem().string();
}

std::vector<std::string> as_python_command(const std::vector<std::string>& command) {
  if (command.empty()) return {};
  if (is_python(command[0])) return command;
  const std::string script = on_path(command[0]);
  std::ifstream in(script);
  std::string first;
  if (script.empty() || !std::getline(in, first) || !first.starts_with("#!")) return {};
  // "#!/usr/bin/python3", "#!/usr/bin/env python3": the interpreter is the word naming Python.
  std::stringstream words(first.substr(2));
  for (std::string word; words >> word;)
    if (is_python(word)) {
      std::vector<std::string> out{word, script};
      out.insert(out.end(), command.begin() + 1, command.end());
      return out;
    }
  return {};
}

PythonLaunch python_launch(const std::vector<std::string>& command, const std::string& trace) {
  const std::string package = installed_file(MEMLENS_PYTHON_BUILD_PATH, MEMLENS_PYTHON_INSTALL_PATH);
  const std::string library = installed_file(MEMLENS_RECORD_ABI_BUILD_PATH, MEMLENS_RECORD_ABI_INSTALL_PATH);
  if (package.empty() || library.empty())
    throw UsageError(
        "record: recording a Python program needs memlens' Python package and libmemlens_record_abi.so, "
        "which were not found beside this memlens");
  PythonLaunch out;
  // The interpreter's own options stay before `-m memlens`.
  std::size_t i = interpreter_options_end(command);
  out.command.assign(command.begin(), command.begin() + static_cast<std::ptrdiff_t>(i));
  for (const char* w : {"-m", "memlens", "record", "-o"}) out.command.push_back(w);
  out.command.push_back(trace);
  if (i < command.size() && (command[i] == "-m" || command[i] == "-c")) {
    out.command.push_back(command[i++]);
    if (i < command.size()) out.command.push_back(command[i++]);
  }
  out.command.push_back("--");
  if (i < command.size() && command[i] == "--") ++i;
  for (; i < command.size(); ++i) out.command.push_back(command[i]);
  const char* path = std::getenv("PYTHONPATH");
  out.environment.emplace_back("PYTHONPATH", path && *path ? package + ":" + path : package);
  out.environment.emplace_back("MEMLENS_RECORD_ABI", library);
  return out;
}

}  // namespace memlens::cli
