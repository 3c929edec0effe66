#pragma once
// The flags every command that analyses an input shares: how a PyTorch snapshot marks
// steps, and the analyses' thresholds.
#include <CLI/CLI.hpp>
#include <string>

#include "memlens/analysis/analyze.hpp"
#include "memlens/snapshot/snapshot_import.hpp"

namespace memlens::cli {

// --step-at and --step-at-scope, for the commands that read snapshots.
void add_snapshot_flags(CLI::App* c, snapshot::ImportOptions& o);

struct AnalysisFlags {
  std::string broadcast_factor = "4", broadcast_floor = "4KiB", top = "10";
  snapshot::ImportOptions import;

  void add(CLI::App* c);
  // Throws UsageError naming the flag whose value is out of range.
  analysis::AnalysisOptions options() const;
};

}  // namespace memlens::cli
