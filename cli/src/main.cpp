// memlens: the command. Every subcommand is a thin front over the analysis library.
// Exit status: 0 all well, 1 a check failed, 2 bad usage or input (one line on stderr).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "exit_codes.hpp"
#include "flag_values.hpp"
#include "output_file.hpp"
#include "memlens/analysis/check.hpp"
#include "memlens/analysis/diff.hpp"
#include "memlens/analysis/history.hpp"
#include "memlens/analysis/render.hpp"
#include "memlens/analysis/replay_trace.hpp"
#include "memlens/profiler/export.hpp"
#include "memlens/snapshot/py_document.hpp"
#include "memlens/snapshot/recording.hpp"
#include "record.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

// Writes a command's document and puts it in place.
void emit(OutputFile& out, const std::string& text) {
  if (!(out.stream() << text)) throw UsageError(out.path() + ": cannot write: " + std::strerror(errno));
  out.commit();
}

bool color_wanted(const std::string& format, const std::string& output) {
  const char* no_color = std::getenv("NO_COLOR");
  return format == "text" && (output.empty() || output == "-") && isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

// How a PyTorch snapshot marks steps, for the commands that read one.
void add_snapshot_flags(CLI::App* c, snapshot::ImportOptions& o) {
  c->add_option("--step-at", o.step_at,
                "snapshots: a step ends where a run of allocations under this Python frame ends "
                "(glob over FUNCTION or FILESTEM.FUNCTION, e.g. optimizers.step)");
  c->add_option("--step-at-scope", o.step_at_scope,
                "snapshots: a step ends where each record_function range of this name ends (glob, e.g. 'ProfilerStep*')");
}

// Options shared by every command that analyses traces.
struct AnalysisFlags {
  std::string broadcast_factor = "4", broadcast_floor = "4KiB", top = "10";
  snapshot::ImportOptions import;
  void add(CLI::App* c) {
    add_snapshot_flags(c, import);
    c->add_option("--broadcast-factor", broadcast_factor,
                  "flag ops whose output is this many times their largest input (1 to 1e6)")
        ->capture_default_str();
    c->add_option("--broadcast-floor", broadcast_floor, "... and at least this large")->capture_default_str();
    c->add_option("--top", top, "sites listed per table (1 to 100000)")->capture_default_str();
  }
  AnalysisOptions options() const {
    AnalysisOptions o;
    o.broadcast_factor = real_flag("--broadcast-factor", broadcast_factor, 1, 1e6);
    o.broadcast_floor = byte_flag("--broadcast-floor", broadcast_floor);
    o.top_sites = count_flag("--top", top, 1, 100000);
    return o;
  }
};

struct ReportCommand {
  std::vector<std::string> files;
  std::string format = "text", only, output;
  bool stacks = false;
  AnalysisFlags flags;
  std::vector<Section> fixed;  // a one-section command: summary, leaks, ...

  int run() const {
    const AnalysisOptions options = flags.options();
    RenderOptions ro;
    ro.base_dir = working_dir();
    if (!fixed.empty()) {
      ro.sections = fixed;
    } else if (!only.empty()) {
      ro.sections.clear();
      std::stringstream ss(only);
      for (std::string name; std::getline(ss, name, ',');) {
        auto s = parse_section(name);
        if (!s) {
          std::string known;
          for (Section k : all_sections()) known += (known.empty() ? "" : ", ") + std::string(section_name(k));
          throw UsageError("--only: unknown section '" + name + "' (expected " + known + ")");
        }
        ro.sections.push_back(*s);
      }
    }
    ro.color = color_wanted(format, output);
    ro.stacks = stacks;
    OutputFile out(output, files, "-o");
    std::vector<Report> reports;
    for (const auto& f : files) reports.push_back(load_trace(f, options, flags.import).report);
    if (format == "json") emit(out, render_json(reports, ro));
    else if (format == "html") emit(out, render_html(reports, ro));
    else if (format == "markdown") emit(out, render_markdown(reports, ro));
    else emit(out, render_text(reports, ro));
    return kOk;
  }
};

void add_report_options(CLI::App* c, ReportCommand& r, bool many) {
  auto* files = c->add_option("FILE", r.files, many ? "traces or PyTorch snapshots (several: one per rank)"
                                                     : "a trace or a PyTorch snapshot")->required();
  if (!many) files->expected(1);
  files->check(CLI::ExistingFile);
  c->add_option("--format", r.format, "text, markdown, json, or html (one self-contained page: timelines, findings, tables)")
      ->check(CLI::IsMember({"text", "markdown", "json", "html"}))
      ->capture_default_str();
  c->add_option("-o,--output", r.output, "write the report to this file");
  c->add_flag("--stacks", r.stacks, "show the whole stack of each allocation site at the peaks (JSON always has them)");
  r.flags.add(c);
}

struct CheckCommand {
  std::string file, device, max_peak, max_reserved, max_leaked, baseline, tolerance = "5%", junit, format = "text";
  std::string history_db = "memlens-history.sqlite";  // --against-history: the history file
  std::string history_runs = "5";
  bool no_leaks = false, no_broadcast = false, against_history = false;
  AnalysisFlags flags;

  int run() const {
    CheckLimits l;
    l.device = device;
    if (!max_peak.empty()) l.max_peak = byte_flag("--max-peak", max_peak);
    if (!max_reserved.empty()) l.max_reserved = byte_flag("--max-reserved", max_reserved);
    if (!max_leaked.empty()) l.max_leaked = byte_flag("--max-leaked", max_leaked);
    l.no_leaks = no_leaks, l.no_broadcast = no_broadcast;
    try {
      l.tolerance = parse_tolerance(tolerance);
    } catch (const CheckError& e) {
      throw UsageError(std::string("--tolerance: ") + e.what());
    }
    try {
      if (!baseline.empty()) l.baseline = parse_baseline(read_input_file(baseline, kMaxBaselineFileBytes), baseline);
    } catch (const CheckError& e) {
      throw UsageError(e.what());
    }
    if (!l.max_peak && !l.max_reserved && !l.max_leaked && !l.no_leaks && !l.no_broadcast && !l.baseline && !against_history)
      throw UsageError("check: nothing to check (give --max-peak, --max-reserved, --max-leaked, --no-leaks, --no-broadcast, "
                       "--baseline or --against-history)");
    const std::size_t last_runs = count_flag("--history-runs", history_runs, 1, 100000);
    const AnalysisOptions options = flags.options();
    std::optional<OutputFile> junit_out;
    if (!junit.empty()) junit_out.emplace(junit, std::vector<std::string>{file, baseline}, "--junit");
    Report r = load_trace(file, options, flags.import).report;
    std::vector<CheckVerdict> verdicts;
    try {
      verdicts = run_checks(r, l, working_dir());
    } catch (const CheckError& e) {
      throw UsageError(file + ": " + e.what());
    }
    if (against_history) {
      try {
        RunHistory history(history_db);
        HistoryVerdict h = check_against_history(history_run(r, "", device), history.runs(r.program), last_runs, l.tolerance);
        CheckVerdict v{"history", h.passed, h.message, {}};
        if (const DeviceReport* d = device.empty() ? r.main_device() : r.device(device); d && !d->peak_allocated.by_site.empty())
          v.site = d->peak_allocated.by_site.front().site;
        verdicts.push_back(std::move(v));
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
    }
    bool ok = true;
    for (const auto& v : verdicts) ok = ok && v.passed;
    if (format == "github") {
      std::fputs(github_annotations(r, verdicts, working_dir()).c_str(), stdout);
    } else if (format == "markdown") {
      std::fputs(check_markdown(file, verdicts).c_str(), stdout);
    } else {
      for (const auto& v : verdicts) {
        std::printf("%s %s: %s\n", v.passed ? "PASS" : "FAIL", v.name.c_str(), v.message.c_str());
        for (const auto& d : v.details) std::printf("       %s\n", d.c_str());
      }
    }
    if (junit_out) emit(*junit_out, junit_xml(file, verdicts));
    if (format != "markdown") std::printf("memlens check: %s (%zu checks)\n", ok ? "passed" : "FAILED", verdicts.size());
    return ok ? kOk : kCheckFailed;
  }
};

// The CUPTI collector: in this build tree, else where it is installed, relative to this
// command.
std::string cupti_library() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (std::filesystem::path candidate : {std::filesystem::path(MEMLENS_CUPTI_BUILD_PATH), self / MEMLENS_CUPTI_INSTALL_PATH})
    if (!std::string(MEMLENS_CUPTI_BUILD_PATH).empty() && std::filesystem::exists(candidate, ec)) return candidate.lexically_normal();
  throw UsageError("record: --cupti needs libmemlens_cupti.so, which this build does not have (no CUDA toolkit with CUPTI)");
}

struct ImportCommand {
  std::string file, output;
  snapshot::ImportOptions options;

  int run() const {
    if (output == "-") throw UsageError("import: -o must name a file (a trace is binary)");
    OutputFile out(output, {file}, "-o");
    snapshot::ImportSummary sum;
    try {
      sum = snapshot::import_snapshot_file(file, out.write_path(), options);
    } catch (const snapshot::SnapshotError& e) {
      throw UsageError(e.what());
    }
    out.commit();
    std::error_code ec;
    auto size = std::filesystem::file_size(output, ec);
    std::printf("memlens: imported %s (%s, %llu trace entries, %llu device%s) to %s: %llu events, %s\n", file.c_str(),
                sum.encoding == snapshot::SnapshotEncoding::Pickle ? "pickle" : "JSON",
                static_cast<unsigned long long>(sum.entries), static_cast<unsigned long long>(sum.devices),
                sum.devices == 1 ? "" : "s", output.c_str(), static_cast<unsigned long long>(sum.events),
                bytes_text(ec ? 0 : size).c_str());
    std::printf("memlens: %llu allocations in %llu segments existed before the first entry (rewound from the state at dump)\n",
                static_cast<unsigned long long>(sum.blocks_at_start), static_cast<unsigned long long>(sum.segments_at_start));
    if (sum.steps) std::printf("memlens: %llu steps marked\n", static_cast<unsigned long long>(sum.steps));
    if (sum.skipped)
      std::printf("memlens: %llu entries of other actions (snapshot markers) skipped\n", static_cast<unsigned long long>(sum.skipped));
    return kOk;
  }
};

// memlens history add|show: a program's memory across commits.
struct HistoryCommand {
  std::string db = "memlens-history.sqlite", run_file, commit, device, program, format = "text", output;

  int add() const {
    if (commit.empty()) throw UsageError("history add: give --commit (e.g. --commit \"$(git rev-parse HEAD)\")");
    Report r = load_trace(run_file).report;
    try {
      RunHistory history(db);
      HistoryRun run = history_run(r, commit, device);
      history.add(run);
      std::printf("memlens: added %s at %s to %s: peak %s allocated on %s (run %lld of %s)\n", run_file.c_str(), commit.c_str(),
                  db.c_str(), bytes_text(run.peak_allocated).c_str(), run.device.c_str(), static_cast<long long>(run.id),
                  run.program.c_str());
    } catch (const HistoryError& e) {
      throw UsageError(e.what());
    }
    return kOk;
  }

  int show() const {
    OutputFile out(output, {db}, "-o");
    std::vector<HistoryRun> runs;
    try {
      runs = RunHistory(db).runs(program);
    } catch (const HistoryError& e) {
      throw UsageError(e.what());
    }
    if (format == "svg") emit(out, history_svg(runs));
    else if (format == "html")
      emit(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memlens history</title></head><body>\n" +
                    history_svg(runs) + "<pre>" + xml_escape(history_text(runs)) + "</pre>\n</body></html>\n");
    else emit(out, history_text(runs));
    return kOk;
  }
};

// "change: peak reserved 56.91 GiB -> 51.69 GiB (-5.22 GiB), OOMs 0 -> 0"
std::string replay_change(const profiler::ReplayResult& before, const profiler::ReplayResult& after) {
  auto signed_bytes = [](std::int64_t d) {
    return (d < 0 ? "-" : "+") + bytes_text(static_cast<std::uint64_t>(d < 0 ? -d : d));
  };
  std::string out = "change: peak reserved " + bytes_text(static_cast<std::uint64_t>(before.peak_reserved)) + " -> " +
                    bytes_text(static_cast<std::uint64_t>(after.peak_reserved)) + " (" +
                    signed_bytes(after.peak_reserved - before.peak_reserved) + "), OOMs " +
                    std::to_string(before.ooms.size()) + " -> " + std::to_string(after.ooms.size());
  if (!before.ooms.empty())
    out += after.ooms.empty() ? ": this setting would have avoided every recorded OOM"
                              : after.ooms.size() < before.ooms.size() ? ": fewer, not all, avoided" : "";
  return out + "\n";
}

int run_record(const RecordRequest& req) {
  RecordOutcome out = record_program(req);
  std::error_code ec;
  auto size = std::filesystem::file_size(out.trace, ec);
  if (ec || size == 0)
    throw UsageError(req.command[0] + " (" + out.how + ") wrote no trace to " + out.trace +
                     ": is it linked with memlens::recorder?");
  LoadedTrace t = load_trace(out.trace);
  const Report& r = t.report;
  std::printf("memlens: recorded %s (%s) to %s: %llu events, %s\n", req.command[0].c_str(), out.how.c_str(), out.trace.c_str(),
              static_cast<unsigned long long>(r.events), bytes_text(size).c_str());
  std::string peaks;
  for (const auto& d : r.devices)
    peaks += (peaks.empty() ? "" : "; ") + d.name + " " + bytes_text(d.peak_allocated.allocated) +
             " allocated, " + bytes_text(d.peak_reserved.reserved) + " reserved";
  std::printf("memlens: peak %s\n", peaks.empty() ? "none: no memory events" : peaks.c_str());
  std::string kinds;
  std::map<std::string, int> counts;
  for (const auto& f : r.findings) ++counts[std::string(finding_kind_name(f.kind))];
  for (const auto& [k, n] : counts) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  std::printf("memlens: %s; see `memlens report %s`\n", kinds.empty() ? "no findings" : ("findings: " + kinds).c_str(),
              out.trace.c_str());
  return out.exit_status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memlens: memory profiler and diagnostics for tensor programs.\n"
               "Exit status: 0 all well, 1 a check failed, 2 bad usage or input.",
               "memlens"};
  app.set_version_flag("--version", "memlens " MEMLENS_VERSION);
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");

  RecordRequest rec;
  auto* record = app.add_subcommand("record", "run a program linked with the memlens runtime under the recorder");
  record->add_option("-o,--output", rec.output, "trace to write (default memlens-PROGRAM.memtrace)");
  record->add_flag("--stacks", rec.stacks, "record native stacks on allocations (MEMLENS_STACKS=1)");
  record->add_option("--stack-depth", rec.stack_depth, "deepest stack recorded (default 32)")->check(CLI::Range(1, 32));
  record->add_option("--device", rec.device, "what serves the program's cuda(): sim, cuda or cpu")
      ->check(CLI::IsMember({"sim", "cuda", "cpu", "auto"}));
  bool cupti = false;
  record->add_flag("--cupti", cupti, "record any CUDA program through CUPTI (segments, pool blocks, copies, memsets)");
  record->add_option("command", rec.command, "PROGRAM ARGS... (after --)")->required();
  record->positionals_at_end();
  record->footer("Example: memlens record -o lr.memtrace -- build/samples/linear_regression 100\n"
                 "Exits with the program's exit status (128+N when killed by signal N).");

  ReportCommand report_cmd;
  auto* report = app.add_subcommand("report", "every section of one or more traces (one per rank)");
  add_report_options(report, report_cmd, true);
  report->add_option("--only", report_cmd.only, "comma-separated sections: summary,peak,leaks,broadcast,contiguity,"
                                                "transfers,churn,fragmentation,timeline");

  // One section each: memlens leaks FILE, ...
  std::vector<std::pair<CLI::App*, std::unique_ptr<ReportCommand>>> singles;
  const std::pair<Section, const char*> single_sections[] = {
      {Section::Summary, "devices, peaks and findings in a few lines"},
      {Section::Peak, "what was live at each device's peak, by category and site"},
      {Section::Leaks, "memory alive at the end, and sites that grow step after step"},
      {Section::Broadcast, "ops whose output broadcasting made far larger than their inputs"},
      {Section::Contiguity, "copies made to satisfy layout, with the views behind them"},
      {Section::Transfers, "copies between devices per site and step; data sent again"},
      {Section::Churn, "buffers allocated afresh every step; temporaries"},
      {Section::Fragmentation, "reserved vs allocated and the largest free block, at peak and OOMs"},
      {Section::Timeline, "allocated memory over time"}};
  for (auto [section, help] : single_sections) {
    auto cmd = std::make_unique<ReportCommand>();
    cmd->fixed = {section};
    auto* sub = app.add_subcommand(std::string(section_name(section)), help);
    add_report_options(sub, *cmd, true);
    singles.emplace_back(sub, std::move(cmd));
  }

  std::string diff_a, diff_b, diff_format = "text", diff_output;
  auto* diff = app.add_subcommand("diff", "compare two traces: peaks, categories, sites, findings");
  diff->add_option("A", diff_a, "the trace (or PyTorch snapshot) before")->required()->check(CLI::ExistingFile);
  diff->add_option("B", diff_b, "the trace (or PyTorch snapshot) after")->required()->check(CLI::ExistingFile);
  diff->add_option("--format", diff_format, "text, markdown, json, or html (both timelines on one scale)")
      ->check(CLI::IsMember({"text", "markdown", "json", "html"}))
      ->capture_default_str();
  diff->add_option("-o,--output", diff_output, "write the diff to this file");

  std::string export_file, export_chrome, export_json;
  auto* exp = app.add_subcommand("export", "write a trace as Chrome trace JSON (Perfetto) or JSON lines");
  exp->add_option("FILE", export_file, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
  auto* chrome = exp->add_option("--chrome", export_chrome, "Chrome trace JSON to write (opens in ui.perfetto.dev)");
  auto* jsonl = exp->add_option("--json", export_json, "JSON event stream to write, one event per line");
  chrome->excludes(jsonl);

  std::string replay_file, replay_conf, replay_device, replay_capacity;
  auto* rep = app.add_subcommand("replay", "run a trace's allocations through another allocator configuration");
  rep->add_option("FILE", replay_file, "a trace, or a replay script (\"alloc ID BYTES\" / \"free ID\" lines)")
      ->required()->check(CLI::ExistingFile);
  rep->add_option("--alloc-conf", replay_conf, "PYTORCH_CUDA_ALLOC_CONF-style settings, e.g. expandable_segments:True");
  rep->add_option("--device", replay_device, "the trace's device to replay (default: the first accelerator)");
  rep->add_option("--capacity", replay_capacity, "device size (default: the traced device's, else 16GiB)");

  CheckCommand check_cmd;
  auto* check = app.add_subcommand("check", "the CI gate: limits and a baseline; exit 1 when one fails");
  check->add_option("FILE", check_cmd.file, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
  check->add_option("--device", check_cmd.device, "device the limits speak of (default: the busiest accelerator)");
  check->add_option("--max-peak", check_cmd.max_peak, "peak allocated at most this, e.g. 512MiB");
  check->add_option("--max-reserved", check_cmd.max_reserved, "peak reserved at most this");
  check->add_flag("--no-leaks", check_cmd.no_leaks, "fail on memory alive at the end or growing step after step");
  check->add_option("--max-leaked", check_cmd.max_leaked, "leaked bytes at most this");
  check->add_flag("--no-broadcast", check_cmd.no_broadcast, "fail on broadcast findings");
  check->add_option("--baseline", check_cmd.baseline, "a file from `memlens baseline`")->check(CLI::ExistingFile);
  check->add_option("--tolerance", check_cmd.tolerance, "how much a baseline figure may grow")->capture_default_str();
  check->add_option("--junit", check_cmd.junit, "write the verdicts as JUnit XML");
  check->add_flag("--against-history", check_cmd.against_history,
                  "fail when peak allocated rises above the median of the program's last runs in the history (by --tolerance)");
  check->add_option("--db", check_cmd.history_db, "the history file (memlens history add)")->capture_default_str();
  check->add_option("--history-runs", check_cmd.history_runs, "how many of the last runs --against-history compares with")
      ->capture_default_str();
  check->add_option("--format", check_cmd.format,
                    "text; github (Actions annotations at the source lines: failed checks and every finding); "
                    "markdown (a table for $GITHUB_STEP_SUMMARY)")
      ->check(CLI::IsMember({"text", "github", "markdown"}))
      ->capture_default_str();
  check_cmd.flags.add(check);
  check->footer("On sim, memory is deterministic: a baseline is exact and a tolerance only allows for intended change.");

  std::string base_file, base_out, base_device;
  auto* base = app.add_subcommand("baseline", "write a trace's peaks and leaks for later `check --baseline`");
  base->add_option("FILE", base_file, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
  base->add_option("-o,--output", base_out, "baseline JSON to write")->required();
  base->add_option("--device", base_device, "device to take (default: the busiest accelerator)");

  HistoryCommand history_cmd;
  auto* hist = app.add_subcommand("history", "a program's memory across commits, kept in an SQLite file");
  hist->require_subcommand(1);
  auto* hist_add = hist->add_subcommand("add", "store a run's peaks, leaks, findings and top sites");
  hist_add->add_option("RUN", history_cmd.run_file, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
  hist_add->add_option("--commit", history_cmd.commit, "the commit the run was made at")->required();
  hist_add->add_option("--device", history_cmd.device, "device to take (default: the busiest accelerator)");
  auto* hist_show = hist->add_subcommand("show", "each program's runs, and the commit that moved peak memory most");
  hist_show->add_option("--program", history_cmd.program, "only this program");
  hist_show->add_option("--format", history_cmd.format, "text, svg (peak allocated over the runs) or html")
      ->check(CLI::IsMember({"text", "svg", "html"}))
      ->capture_default_str();
  hist_show->add_option("-o,--output", history_cmd.output, "write it to this file");
  for (auto* c : {hist_add, hist_show}) c->add_option("--db", history_cmd.db, "the history file")->capture_default_str();
  hist->footer("Example, in CI after each commit's memory test:\n"
               "  memlens history add run.memtrace --commit \"$(git rev-parse HEAD)\"\n"
               "  memlens check run.memtrace --against-history --tolerance 5%");

  ImportCommand import_cmd;
  auto* imp = app.add_subcommand("import", "convert a PyTorch memory snapshot (pickle or JSON) into a trace");
  imp->add_option("FILE", import_cmd.file, "torch.cuda.memory._dump_snapshot() output")->required()->check(CLI::ExistingFile);
  imp->add_option("-o,--output", import_cmd.output, "trace to write")->required();
  add_snapshot_flags(imp, import_cmd.options);
  imp->footer("Every command reads snapshots directly too; import converts once, for repeated use.\n"
              "Example: memlens import run.pickle -o run.memtrace --step-at-scope 'ProfilerStep*'");

  std::string view_file;
  auto* view = app.add_subcommand("view", "open a trace or a PyTorch snapshot in memlens-viewer");
  view->add_option("FILE", view_file, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where;
    for (auto* sub : app.get_subcommands()) where = std::string(" ") + sub->get_name();
    std::fprintf(stderr, "memlens%s: %s (see memlens%s --help)\n", where.c_str(), e.what(), where.c_str());
    return kBadInput;
  }

  try {
    if (record->parsed()) {
      if (cupti) rec.cupti_library = cupti_library();
      return run_record(rec);
    }
    if (report->parsed()) return report_cmd.run();
    for (auto& [sub, cmd] : singles)
      if (sub->parsed()) return cmd->run();
    if (diff->parsed()) {
      OutputFile out(diff_output, {diff_a, diff_b}, "-o");
      Report a = load_trace(diff_a).report, b = load_trace(diff_b).report;
      RenderOptions ro;
      ro.base_dir = working_dir();
      ro.color = color_wanted(diff_format, diff_output);
      ReportDiff d = diff_reports(a, b);
      emit(out, diff_format == "html" ? render_diff_html(a, b, d, ro) : render_diff(d, diff_format, ro));
      return kOk;
    }
    if (exp->parsed()) {
      if (export_chrome.empty() && export_json.empty()) throw UsageError("export: give --chrome OUT.json or --json OUT.json");
      OutputFile out(export_chrome.empty() ? export_json : export_chrome, {export_file},
                     export_chrome.empty() ? "--json" : "--chrome");
      auto reader = open_trace(export_file);
      if (!export_chrome.empty()) profiler::export_chrome_trace(*reader, out.stream());
      else profiler::export_json_events(*reader, out.stream());
      out.commit();
      warn_if_incomplete(*reader);
      std::printf("memlens: wrote %s\n", out.is_stdout() ? "stdout" : out.path().c_str());
      return kOk;
    }
    if (rep->parsed()) {
      profiler::ReplayOptions o;
      try {
        if (!replay_conf.empty()) o.config = AllocatorConfig::parse(replay_conf);
      } catch (const std::exception& e) {
        throw UsageError(std::string("--alloc-conf: ") + e.what());
      }
      std::optional<std::uint64_t> capacity;
      if (!replay_capacity.empty()) capacity = byte_flag("--capacity", replay_capacity, kMinReplayCapacity);
      std::vector<profiler::ReplayRequest> requests;
      std::optional<profiler::ReplayOptions> run_options;  // the trace's own, to compare with
      std::string head = read_input_file(replay_file, 64, /*prefix=*/true);
      std::string announce;
      if (head.starts_with(std::string_view(profiler::kTraceMagic, 8)) ||
          snapshot::sniff_snapshot(head) != snapshot::SnapshotEncoding::NotSnapshot) {
        auto reader = open_trace(replay_file);
        // The run's own configuration, with --alloc-conf's settings over it.
        try {
          o.config = AllocatorConfig::parse(reader->header().allocator_config + "," + replay_conf);
        } catch (const std::exception& e) {
          throw UsageError(std::string("--alloc-conf: ") + e.what());
        }
        std::string chosen;
        try {
          requests = replay_requests(*reader, replay_device, &chosen);
        } catch (const std::exception& e) {
          throw UsageError(replay_file + ": " + e.what());
        }
        bool known_capacity = false;
        for (const auto& d : reader->header().devices)
          if (d.name == chosen && d.capacity) o.capacity = d.capacity, known_capacity = true;
        announce = "replaying " + std::to_string(requests.size()) + " requests of " +
                   (chosen.empty() ? std::string("no device") : chosen) + " from " + replay_file + "\n";
        if (!known_capacity && !capacity) {
          // A PyTorch snapshot does not say how large its device was.
          o.capacity = kUnknownCapacity;
          announce += "the trace does not give the device's size: replayed on a 1.00 TiB device (--capacity sets one)\n";
        }
        if (!replay_conf.empty()) {
          // What the setting changes: the run's own configuration first, then with it.
          profiler::ReplayOptions own = o;
          own.config = AllocatorConfig::parse(reader->header().allocator_config);
          if (capacity) own.capacity = *capacity;
          run_options = own;
        }
      } else {
        std::ifstream in(replay_file);
        try {
          requests = profiler::parse_replay(in, replay_file);
        } catch (const std::exception& e) {
          throw UsageError(e.what());
        }
      }
      if (capacity) o.capacity = *capacity;
      profiler::ReplayResult result = profiler::replay(requests, o);
      std::string text = announce;
      if (run_options) {
        profiler::ReplayResult own = profiler::replay(requests, *run_options);
        text += "as recorded:\n" + profiler::format_replay(own, *run_options) + "with --alloc-conf " + replay_conf + ":\n" +
                profiler::format_replay(result, o) + replay_change(own, result);
      } else {
        text += profiler::format_replay(result, o);
      }
      std::fputs(text.c_str(), stdout);
      return kOk;
    }
    if (check->parsed()) return check_cmd.run();
    if (imp->parsed()) return import_cmd.run();
    if (hist_add->parsed()) return history_cmd.add();
    if (hist_show->parsed()) return history_cmd.show();
    if (base->parsed()) {
      OutputFile out(base_out, {base_file}, "-o");
      Report r = load_trace(base_file).report;
      Baseline b;
      try {
        b = make_baseline(r, base_device);
      } catch (const CheckError& e) {
        throw UsageError(base_file + ": " + e.what());
      }
      emit(out, baseline_json(b));
      std::printf("memlens: baseline of %s on %s written to %s: peak %s allocated, %s reserved, %s leaked\n",
                  base_file.c_str(), b.device.c_str(), base_out.c_str(),
                  bytes_text(b.peak_allocated).c_str(),
                  bytes_text(b.peak_reserved).c_str(),
                  bytes_text(b.leaked_bytes).c_str());
      return kOk;
    }
    if (view->parsed()) {
      // Beside memlens when installed, in viewer/ of the same build tree, else on PATH.
      auto dir = std::filesystem::path(argv[0]).parent_path();
      std::filesystem::path viewer = "memlens-viewer";
      std::error_code ec;
      for (auto candidate : {dir / "memlens-viewer", dir / ".." / "viewer" / "memlens-viewer"})
        if (std::filesystem::exists(candidate, ec)) {
          viewer = candidate;
          break;
        }
      execlp(viewer.c_str(), viewer.c_str(), view_file.c_str(), static_cast<char*>(nullptr));
      throw UsageError("view: cannot start " + viewer.string() + ": " + std::strerror(errno) +
                       " (build with -DMEMLENS_VIEWER=ON)");
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "memlens: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memlens: error: %s\n", e.what());
    return kBadInput;
  }
  return kBadInput;
}

}  // namespace memlens::cli

int main(int argc, char** argv) { return memlens::cli::main(argc, argv); }
