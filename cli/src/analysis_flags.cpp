#include "analysis_flags.hpp"

#include "flag_values.hpp"

namespace memlens::cli {

void add_snapshot_flags(CLI::App* c, snapshot::ImportOptions& o) {
  c->add_option("--step-at", o.step_at,
                "snapshots: a step ends where a run of allocations under this Python frame ends "
                "(glob over FUNCTION or FILESTEM.FUNCTION, e.g. optimizers.step)");
  c->add_option("--step-at-scope", o.step_at_scope,
                "snapshots: a step ends where each record_function range of this name ends (glob, e.g. 'ProfilerStep*')");
}

void AnalysisFlags::add(CLI::App* c) {
  add_snapshot_flags(c, import);
  c->add_option("--broadcast-factor", broadcast_factor, "flag ops whose output is this many times their largest input (1 to 1e6)")
      ->capture_default_str();
  c->add_option("--broadcast-floor", broadcast_floor, "... and at least this large")->capture_default_str();
  c->add_option("--top", top, "sites listed per table (1 to 100000)")->capture_default_str();
}

analysis::AnalysisOptions AnalysisFlags::options() const {
  analysis::AnalysisOptions o;
  o.broadcast_factor = real_flag("--broadcast-factor", broadcast_factor, 1, 1e6);
  o.broadcast_floor = byte_flag("--broadcast-floor", broadcast_floor);
  o.top_sites = count_flag("--top", top, 1, 100000);
  return o;
}

}  // namespace memlens::cli
