#include "memlens/analysis/history.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "memlens/analysis/check.hpp"
#include "memlens/analysis/render.hpp"

namespace memlens::analysis {

namespace {

constexpr int kSchemaVersion = 1;  // PRAGMA user_version of a memlens history file

// One prepared statement, finalised on every path.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const char* sql) : path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) throw HistoryError(path + ": " + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }
  // SQLITE_ROW or SQLITE_DONE; anything else is an error naming the file.
  int step() {
    int rc = sqlite3_step(stmt_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) throw HistoryError(path_ + ": " + sqlite3_errmsg(sqlite3_db_handle(stmt_)));
    return rc;
  }

 private:
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
};

std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

std::uint64_t column_u64(sqlite3_stmt* s, int i) {
  return static_cast<std::uint64_t>(std::max<sqlite3_int64>(0, sqlite3_column_int64(s, i)));
}

std::string signed_bytes(std::int64_t d) { return (d < 0 ? "-" : "+") + bytes_text(static_cast<std::uint64_t>(d < 0 ? -d : d)); }

std::string short_commit(const std::string& c) { return c.substr(0, 12); }

}  // namespace

HistoryRun history_run(const Report& r, const std::string& commit, const std::string& device) {
  // The headline figures are a baseline's; the history adds findings and top sites.
  Baseline b;
  try {
    b = make_baseline(r, device);
  } catch (const CheckError& e) {
    throw HistoryError(e.what());
  }
  const DeviceReport* d = r.device(b.device);
  HistoryRun h;
  h.program = b.program;
  h.commit = commit;
  h.device = b.device;
  h.added_unix = static_cast<std::int64_t>(std::time(nullptr));
  h.peak_allocated = b.peak_allocated;
  h.peak_reserved = b.peak_reserved;
  h.leaked_bytes = b.leaked_bytes;
  for (const Finding& f : r.findings) ++h.findings[std::string(finding_kind_name(f.kind))];
  if (d)
    for (std::size_t i = 0; i < d->peak_allocated.by_site.size() && i < 5; ++i)
      h.top_sites.emplace_back(site_text(r.site(d->peak_allocated.by_site[i].site), ""), d->peak_allocated.by_site[i].bytes);
  return h;
}

RunHistory::RunHistory(const std::string& path) : path_(path) {
  // An existing path must be a regular file: a FIFO or a device is never opened.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw HistoryError(path + ": cannot open: not a regular file");
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw HistoryError(path + ": cannot open: " + why);
  }
  sqlite3_busy_timeout(db_, 5000);  // two CI jobs adding at once wait for each other
  try {
    Statement version(db_, path_, "PRAGMA user_version");
    version.step();
    int v = sqlite3_column_int(version.get(), 0);
    if (v > kSchemaVersion)
      throw HistoryError(path + ": history format " + std::to_string(v) + " is newer than this memlens reads");
    char* err = nullptr;
    const char* schema =
        "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, program TEXT NOT NULL, commit_id TEXT NOT NULL, "
        "device TEXT NOT NULL, added_unix INTEGER NOT NULL, peak_allocated INTEGER NOT NULL, peak_reserved INTEGER NOT NULL, "
        "leaked_bytes INTEGER NOT NULL, findings TEXT NOT NULL, top_sites TEXT NOT NULL); PRAGMA user_version = 1;";
    if (sqlite3_exec(db_, schema, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string why = err ? err : "unknown error";
      sqlite3_free(err);
      throw HistoryError(path + ": " + why);
    }
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

RunHistory::~RunHistory() { sqlite3_close(db_); }

void RunHistory::add(HistoryRun& run) {
  Statement s(db_, path_,
              "INSERT INTO runs (program, commit_id, device, added_unix, peak_allocated, peak_reserved, leaked_bytes, findings, "
              "top_sites) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  nlohmann::json sites = nlohmann::json::array();
  for (const auto& [site, bytes] : run.top_sites) sites.push_back({{"site", site}, {"bytes", bytes}});
  sqlite3_bind_text(s.get(), 1, run.program.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s.get(), 2, run.commit.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s.get(), 3, run.device.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(s.get(), 4, run.added_unix);
  sqlite3_bind_int64(s.get(), 5, static_cast<sqlite3_int64>(run.peak_allocated));
  sqlite3_bind_int64(s.get(), 6, static_cast<sqlite3_int64>(run.peak_reserved));
  sqlite3_bind_int64(s.get(), 7, static_cast<sqlite3_int64>(run.leaked_bytes));
  std::string findings = nlohmann::json(run.findings).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
              top = sites.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  sqlite3_bind_text(s.get(), 8, findings.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s.get(), 9, top.c_str(), -1, SQLITE_TRANSIENT);
  s.step();
  run.id = sqlite3_last_insert_rowid(db_);
}

std::vector<HistoryRun> RunHistory::runs(const std::string& program) const {
  Statement s(
      db_, path_,
      "SELECT id, program, commit_id, device, added_unix, peak_allocated, peak_reserved, leaked_bytes, findings, top_sites "
      "FROM runs WHERE ?1 = '' OR program = ?1 ORDER BY id");
  sqlite3_bind_text(s.get(), 1, program.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<HistoryRun> out;
  while (s.step() == SQLITE_ROW) {
    HistoryRun h;
    h.id = sqlite3_column_int64(s.get(), 0);
    h.program = column_text(s.get(), 1), h.commit = column_text(s.get(), 2), h.device = column_text(s.get(), 3);
    h.added_unix = sqlite3_column_int64(s.get(), 4);
    h.peak_allocated = column_u64(s.get(), 5), h.peak_reserved = column_u64(s.get(), 6), h.leaked_bytes = column_u64(s.get(), 7);
    // Written by add(); a row someone else wrote that does not parse keeps its figures.
    auto findings = nlohmann::json::parse(column_text(s.get(), 8), nullptr, false);
    if (findings.is_object())
      for (auto& [k, v] : findings.items())
        if (v.is_number_unsigned()) h.findings[k] = v.get<std::uint64_t>();
    auto sites = nlohmann::json::parse(column_text(s.get(), 9), nullptr, false);
    if (sites.is_array())
      for (const auto& x : sites)
        if (x.is_object() && x.value("site", nlohmann::json()).is_string() &&
            x.value("bytes", nlohmann::json()).is_number_unsigned())
          h.top_sites.emplace_back(x["site"].get<std::string>(), x["bytes"].get<std::uint64_t>());
    out.push_back(std::move(h));
  }
  return out;
}

std::string history_text(const std::vector<HistoryRun>& runs) {
  std::map<std::string, std::vector<const HistoryRun*>> by_program;
  for (const auto& r : runs) by_program[r.program].push_back(&r);
  if (by_program.empty()) return "no runs in this history yet (memlens history add RUN --commit SHA)\n";
  std::string out;
  for (const auto& [program, series] : by_program) {
    out += program + " on " + series.back()->device + ": " + std::to_string(series.size()) + " run" +
           (series.size() == 1 ? "" : "s") + "\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-12s  %14s  %14s  %12s  %s\n", "commit", "peak allocated", "peak reserved", "leaked",
                  "findings");
    out += line;
    for (const HistoryRun* r : series) {
      std::string findings;
      for (const auto& [k, n] : r->findings) findings += (findings.empty() ? "" : ", ") + std::to_string(n) + " " + k;
      std::snprintf(line, sizeof line, "  %-12s  %14s  %14s  %12s  %s\n", short_commit(r->commit).c_str(),
                    bytes_text(r->peak_allocated).c_str(), bytes_text(r->peak_reserved).c_str(),
                    bytes_text(r->leaked_bytes).c_str(), findings.empty() ? "none" : findings.c_str());
      out += line;
    }
    // The step between consecutive runs that moved peak allocated most, either way.
    const HistoryRun *from = nullptr, *to = nullptr;
    std::int64_t biggest = 0;
    for (std::size_t i = 1; i < series.size(); ++i) {
      auto d = static_cast<std::int64_t>(series[i]->peak_allocated) - static_cast<std::int64_t>(series[i - 1]->peak_allocated);
      if (std::llabs(d) > std::llabs(biggest)) biggest = d, from = series[i - 1], to = series[i];
    }
    if (to)
      out += "  most moved by " + short_commit(to->commit) + ": peak allocated " + signed_bytes(biggest) + " (" +
             bytes_text(from->peak_allocated) + " -> " + bytes_text(to->peak_allocated) + ", after " +
             short_commit(from->commit) + ")\n";
    else if (series.size() > 1) out += "  peak allocated never changed\n";
  }
  return out;
}

std::string history_svg(const std::vector<HistoryRun>& runs) {
  std::map<std::string, std::vector<const HistoryRun*>> by_program;
  for (const auto& r : runs) by_program[r.program].push_back(&r);
  const int width = 800, height = 320, left = 80, right = 20, top = 20, bottom = 40;
  std::uint64_t max = 1;
  std::size_t longest = 1;
  for (const auto& [p, s] : by_program) {
    longest = std::max(longest, s.size());
    for (const auto* r : s) max = std::max(max, r->peak_allocated);
  }
  auto x = [&](std::size_t i) {
    return left + (longest > 1 ? static_cast<double>(i) / static_cast<double>(longest - 1) : 0.5) * (width - left - right);
  };
  auto y = [&](std::uint64_t b) {
    return height - bottom - static_cast<double>(b) / static_cast<double>(max) * (height - top - bottom);
  };
  const char* colours[] = {"#4285f4", "#34a853", "#fbbc05", "#ab47bc", "#ff7043", "#00acc1"};
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
                    std::to_string(height) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  char buf[256];
  for (int k = 0; k <= 4; ++k) {
    std::uint64_t b = max / 4 * static_cast<std::uint64_t>(k);
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/><text x=\"4\" y=\"%.1f\">%s</text>\n",
                  left, width - right, y(b), y(b), y(b) + 4, bytes_text(b).c_str());
    out += buf;
  }
  std::size_t c = 0;
  for (const auto& [program, series] : by_program) {
    std::string points;
    for (std::size_t i = 0; i < series.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(i), y(series[i]->peak_allocated));
      points += buf;
    }
    const char* colour = colours[c % std::size(colours)];
    out += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"2\" points=\"" + points + "\"><title>" +
           xml_escape(program) + ": peak allocated</title></polyline>\n";
    std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", left + 200 * static_cast<int>(c % 3),
                  height - 22 + 12 * static_cast<int>(c / 3), colour, xml_escape(program).c_str());
    out += buf;
    ++c;
  }
  return out + "</svg>\n";
}

HistoryVerdict check_against_history(const HistoryRun& run, const std::vector<HistoryRun>& earlier, std::size_t last,
                                     double tolerance) {
  std::vector<std::uint64_t> peaks;
  for (auto it = earlier.rbegin(); it != earlier.rend() && peaks.size() < last; ++it)
    if (it->program == run.program) peaks.push_back(it->peak_allocated);
  HistoryVerdict v;
  if (peaks.empty()) {
    v.message = "no earlier run of " + run.program + " in the history: nothing to compare with";
    return v;
  }
  std::sort(peaks.begin(), peaks.end());
  std::uint64_t median = peaks[peaks.size() / 2];
  auto allowed = static_cast<std::uint64_t>(static_cast<double>(median) * (1 + tolerance));
  char tol[32];
  std::snprintf(tol, sizeof tol, "%g%%", tolerance * 100);
  v.passed = run.peak_allocated <= allowed;
  v.message = "peak allocated " + bytes_text(run.peak_allocated) + " against a median of " + bytes_text(median) +
              " over the last " + std::to_string(peaks.size()) + " run" + (peaks.size() == 1 ? "" : "s") + " (" +
              signed_bytes(static_cast<std::int64_t>(run.peak_allocated) - static_cast<std::int64_t>(median)) + "; tolerance " +
              tol + ")";
  return v;
}

}  // namespace memlens::analysis
