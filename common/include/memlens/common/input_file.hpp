#pragma once
// Opening a file that a command line or someone else's data names (a trace, a baseline, a
// module in a trace's table): only a regular file is opened, and never in blocking mode,
// so a FIFO or a device named there cannot hang or feed the reader.
#include <string>

namespace memlens {

// A read-only descriptor, or -1 with `why` set ("not a regular file", or the system's
// reason). The caller closes it.
int open_regular_file(const std::string& path, std::string* why = nullptr);

}  // namespace memlens
