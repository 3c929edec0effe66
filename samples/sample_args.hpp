#pragma once
// The samples' command line: an optional count (steps, epochs) and an optional
// `--fixed` that runs the corrected twin of what the sample shows.
#include <cstdlib>
#include <cstring>

namespace memlens::samples {

struct SampleArgs {
  int count;
  bool fixed = false;
};

inline SampleArgs parse_args(int argc, char** argv, int default_count) {
  SampleArgs a{default_count};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fixed") == 0) a.fixed = true;
    else a.count = std::atoi(argv[i]);
  }
  return a;
}

}  // namespace memlens::samples
