#pragma once
// Every file a command writes goes through one OutputFile. It refuses a path that is one
// of the command's inputs (the same file by device and inode, so hard and symbolic links
// count), and writes to a temporary file beside the destination that is renamed over it
// only on commit(): a command that fails leaves no partial output and the old file whole.
// It is opened before the command's work, so an unwritable path fails before any output.
#include <fstream>
#include <iosfwd>
#include <string>
#include <vector>

namespace memlens::cli {

class OutputFile {
 public:
  // `path` "" or "-" is stdout. `flag` names the option in errors ("-o", "--junit").
  // Throws UsageError when the path is an input or cannot be written.
  OutputFile(std::string path, const std::vector<std::string>& inputs, const std::string& flag);
  ~OutputFile();  // removes the temporary file unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  // For a writer that opens the file itself (a trace): it writes here, then commit().
  const std::string& write_path() const { return temporary_.empty() ? path_ : temporary_; }
  // Flushes and puts the file in place; throws UsageError when that fails.
  void commit();
  bool is_stdout() const { return path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;         // "" for stdout
  std::string destination_;  // where the rename lands (a symbolic link's target)
  std::string temporary_;    // "" when writing in place (stdout, a device, a FIFO)
  std::ofstream file_;
  bool committed_ = false;
};

// Writes a command's whole document to `out` and puts it in place.
void emit(OutputFile& out, const std::string& text);
// Colour for a text document going to a terminal, unless NO_COLOR is set.
bool color_wanted(const std::string& format, const std::string& output);

}  // namespace memlens::cli
