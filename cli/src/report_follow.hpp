#pragma once
// `memlens report --follow FILE`: a recording watched from a terminal. The summary of
// what has arrived (state, per device the memory now and at its peaks, the newest
// findings) is redrawn each second; where the output is not a terminal, each new summary
// is printed below the last, in plain text. Returns once the trace is finished or its
// program is gone (0), or throws UsageError where the file is not a trace.
#include <string>

#include "memlens/analysis/analyze.hpp"
#include "memlens/analysis/render.hpp"

namespace memlens::cli {

int follow_report(const std::string& path, const analysis::AnalysisOptions& options, const analysis::RenderOptions& render);

}  // namespace memlens::cli
