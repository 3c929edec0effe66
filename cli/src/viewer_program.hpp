#pragma once
// memlens-viewer, as `memlens view` and `memlens record --view` start it: $MEMLENS_VIEWER
// when set (a wrapper, another build), else beside memlens when installed, else in
// viewer/ of the same build tree, else on PATH.
#include <string>

namespace memlens::cli {

// `argv0`: where memlens runs from.
std::string viewer_program(const std::string& argv0);

}  // namespace memlens::cli
