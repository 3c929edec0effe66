#pragma once
// `memlens record -- python3 train.py`: a Python program is recorded by memlens' Python
// package (python/memlens), which writes the trace through the recorder's C ABI
// (libmemlens_record_abi.so): the command becomes `python3 [its options] -m memlens
// record -o TRACE -- train.py ...`, with the package on PYTHONPATH and the library in
// MEMLENS_RECORD_ABI, from this build tree or from where memlens is installed.
#include <string>
#include <utility>
#include <vector>

namespace memlens::cli {

// Whether `program` names a Python interpreter (python, python3, python3.12, a path to one).
bool is_python(const std::string& program);

// `command` with its Python interpreter first: as it is when it starts with one; a Python
// script run directly (`torchrun ...`, found on PATH, its first line `#!...python...`)
// becomes `INTERPRETER SCRIPT ...`. Empty when it is not a Python program.
std::vector<std::string> as_python_command(const std::vector<std::string>& command);

// What a Python command runs, for the trace's default name: the script's stem, the
// module of `-m`, or "python" (`-c`, nothing).
std::string python_program_name(const std::vector<std::string>& command);

struct PythonLaunch {
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> environment;  // set in the program's
};

// `command` (an interpreter, its options, then a script, -m MODULE or -c CODE) rewritten
// to record into `trace`. Throws UsageError when the package or library is missing.
PythonLaunch python_launch(const std::vector<std::string>& command, const std::string& trace);

}  // namespace memlens::cli
