#pragma once
// The one door for inputs. Every command, replay and the viewer open what they are given
// here: the file is opened and mapped once, its first bytes say what it is (a memlens
// trace, or a PyTorch memory snapshot as pickle or JSON), and it becomes a trace reader.
// A snapshot is converted into a trace in memory (an anonymous memfd): no file is written.
#include <memory>
#include <string>
#include <string_view>

#include "memlens/common/error.hpp"
#include "memlens/common/mapped_file.hpp"
#include "memlens/snapshot/snapshot_import.hpp"
#include "memlens/trace/trace_reader.hpp"

namespace memlens::input {

enum class InputFormat : std::uint8_t { Trace, PickleSnapshot, JsonSnapshot, Other };
std::string_view format_name(InputFormat f);  // "memlens trace", "pickle snapshot", ...

// One line naming the file: "run.pickle: cannot open: ...", "x: not a PyTorch memory
// snapshot (neither pickle nor JSON)", "run.pickle: pickle offset 12: ...".
class InputError : public Error {
 public:
  using Error::Error;
};

class InputFile {
 public:
  // Opens and maps `path`; throws InputError when it cannot.
  explicit InputFile(const std::string& path);

  InputFormat format() const { return format_; }
  const std::string& path() const { return path_; }
  std::string_view bytes() const { return {file_.data(), file_.size()}; }

  // A reader over the input: a trace read in place, a snapshot converted in memory
  // (`options` say where its steps end). A file of neither kind gets the trace reader's
  // own one-line error ("not a memlens trace (bad magic)"). Throws InputError or TraceError.
  std::unique_ptr<profiler::TraceReader> open(const snapshot::ImportOptions& options = {}) &&;
  // A snapshot converted into a trace file at `trace_path` (memlens import); InputError
  // for anything else.
  snapshot::ImportSummary import_to(const std::string& trace_path, const snapshot::ImportOptions& options = {}) &&;

 private:
  snapshot::ImportSummary import(const snapshot::OpenTraceWriter& open_writer, const snapshot::ImportOptions& options);

  std::string path_;
  MappedFile file_;
  InputFormat format_ = InputFormat::Other;
};

// InputFile(path).open(options): what a command that analyses an input calls.
std::unique_ptr<profiler::TraceReader> open_input(const std::string& path, const snapshot::ImportOptions& options = {});

}  // namespace memlens::input
