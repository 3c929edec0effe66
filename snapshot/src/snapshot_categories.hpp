#pragma once
// What each block of an imported run is, by stated rules over its birth, its death, its
// stacks and the run's annotations (snapshot_categories.cpp says each rule and why).
#include <vector>

#include "memlens/common/event_kinds.hpp"
#include "snapshot_run.hpp"

namespace memlens::snapshot {

// One category per entry of `run.entries`: an Alloc entry's block's; Unknown for the rest.
// (Blocks alive at the first entry are BeforeRecording: the writer says so.)
std::vector<Category> block_categories(const SnapshotRun& run);

}  // namespace memlens::snapshot
