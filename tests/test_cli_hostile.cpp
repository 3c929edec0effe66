// The real `memlens` binary against hostile input and careless output paths: it never
// overwrites an input, never leaves a partial file, refuses numbers that would fool a
// gate, validates before it prints, and never blocks on a FIFO.
#include <sys/stat.h>

#include <filesystem>

#include "crafted_trace.hpp"
#include "memlens_cli.hpp"
#include "trace_builder.hpp"

using namespace memlens::test;
namespace fs = std::filesystem;

namespace {

const std::string& lr() { return recorded("lr", LINEAR_REGRESSION_BIN, "100"); }

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// Files in /tmp that OutputFile left behind for `name` (its temporaries are ".NAME.XXXXXX").
std::size_t leftovers(const std::string& path) {
  std::size_t n = 0;
  std::string stem = "." + fs::path(path).filename().string() + ".";
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    if (e.path().filename().string().rfind(stem, 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("memlens refuses to write over its own input, also through links", "[cli][hostile]") {
  std::string in = temp("victim.memtrace");
  fs::copy_file(lr(), in, fs::copy_options::overwrite_existing);
  const std::string bytes = slurp(in);
  std::string sym = temp("victim-link.json"), hard = temp("victim-hard.json");
  fs::remove(sym), fs::remove(hard);
  fs::create_symlink(in, sym);
  fs::create_hard_link(in, hard);
  const std::string q = quote(in);
  struct Case {
    std::string args, flag, out;
  };
  const Case cases[] = {
      {"report " + q + " -o " + q, "-o", in},
      {"baseline " + q + " -o " + q, "-o", in},
      {"check " + q + " --max-peak 1GiB --junit " + q, "--junit", in},
      {"diff " + q + " " + q + " -o " + q, "-o", in},
      {"export " + q + " --json " + q, "--json", in},
      {"export " + q + " --chrome " + q, "--chrome", in},
  };
  for (const auto& c : cases) {
    Run r = run(c.args);
    INFO(c.args << "\n" << r.out);
    CHECK(r.status == 2);
    CHECK(r.out == "memlens: " + c.flag + " " + c.out + ": is an input of this command; refusing to overwrite it\n");
    CHECK(slurp(in) == bytes);
  }
  for (const auto& link : {sym, hard}) {
    Run r = run("export " + q + " --chrome " + quote(link));
    INFO(r.out);
    CHECK(r.status == 2);
    CHECK(r.out == "memlens: --chrome " + link + ": is the same file as the input " + in + "; refusing to overwrite it\n");
    CHECK(slurp(in) == bytes);
  }
  CHECK(fs::is_symlink(sym));
  fs::remove(sym), fs::remove(hard), fs::remove(in);
}

TEST_CASE("the history file and a file a failed record names are inputs too, never overwritten", "[cli][hostile]") {
  // check --against-history reads the history: --junit must not write XML over it.
  std::string db = temp("history-victim.sqlite");
  write_bytes(db, "a history file");
  Run r = run("check " + quote(lr()) + " --against-history --db " + quote(db) + " --junit " + quote(db));
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(r.out == "memlens: --junit " + db + ": is an input of this command; refusing to overwrite it\n");
  CHECK(slurp(db) == "a history file");
  // A program that cannot start leaves the file -o names as it was.
  std::string kept = temp("record-victim.txt");
  write_bytes(kept, "the old content");
  r = run("record -o " + quote(kept) + " -- /no-such-program");
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(r.out == "memlens: record: cannot run /no-such-program: No such file or directory\n");
  CHECK(slurp(kept) == "the old content");
  // Nor is the program, or a file handed to it, written over by its own trace.
  const std::string program = temp("record-victim-program"), script = temp("record-victim.py");
  fs::copy_file(LINEAR_REGRESSION_BIN, program, fs::copy_options::overwrite_existing);
  const auto program_bytes = fs::file_size(program);
  write_bytes(script, "print('the script')\n");
  r = run("record -o " + quote(program) + " -- " + quote(program) + " 3");
  CHECK(r.status == 2);
  CHECK(r.out ==
        "memlens: record: the trace " + program + " is the program (" + program + "): give the trace a file of its own\n");
  CHECK(fs::file_size(program) == program_bytes);
  r = run("record -o " + quote(script) + " -- python3 " + quote(script));
  CHECK(r.status == 2);
  CHECK(r.out == "memlens: record: the trace " + script + " is an argument of the program (" + script +
                     "): give the trace a file of its own\n");
  CHECK(slurp(script) == "print('the script')\n");
  fs::remove(db), fs::remove(kept), fs::remove(program), fs::remove(script);
}

TEST_CASE("memlens writes outputs whole or not at all", "[cli][hostile]") {
  std::string junk = temp("not-a-trace.memtrace"), out = temp("kept.txt");
  write_bytes(junk, "not a trace at all");
  for (const char* args : {"report %J -o %O", "export %J --json %O", "export %J --chrome %O", "baseline %J -o %O",
                           "check %J --max-peak 1GiB --junit %O"}) {
    write_bytes(out, "the old content");
    std::string a = args;
    a.replace(a.find("%J"), 2, quote(junk));
    a.replace(a.find("%O"), 2, quote(out));
    Run r = run(a);
    INFO(a << "\n" << r.out);
    CHECK(r.status == 2);
    CHECK(lines(r.out) == 1);
    CHECK(slurp(out) == "the old content");
    CHECK(leftovers(out) == 0);
  }
  // A success replaces the file and keeps its mode.
  chmod(out.c_str(), 0640);
  Run ok = run("export " + quote(lr()) + " --json " + quote(out));
  CHECK(ok.status == 0);
  CHECK(slurp(out).find("\"kind\":\"alloc\"") != std::string::npos);
  struct stat st {};
  stat(out.c_str(), &st);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK(leftovers(out) == 0);
  fs::remove(junk), fs::remove(out);
}

TEST_CASE("memlens refuses numbers that would fool a gate, before any output", "[cli][hostile]") {
  const std::string t = quote(lr());
  const std::pair<std::string, std::string> cases[] = {
      {"check " + t + " --max-peak 1GiB --tolerance nan",
       "memlens: --tolerance: invalid tolerance 'nan' (expected e.g. 5% or 0.05, from 0 to 10000%)\n"},
      {"report " + t + " --top -1", "memlens: --top: invalid count '-1' (expected a whole number from 1 to 100000)\n"},
      {"report " + t + " --top 1e23", "memlens: --top: invalid count '1e23' (expected a whole number from 1 to 100000)\n"},
      {"report " + t + " --top 100001", "memlens: --top: count '100001' out of range (expected from 1 to 100000)\n"},
      {"leaks " + t + " --broadcast-factor nan",
       "memlens: --broadcast-factor: number 'nan' out of range (expected from 1 to 1e+06)\n"},
      {"report " + t + " --broadcast-factor -1",
       "memlens: --broadcast-factor: number '-1' out of range (expected from 1 to 1e+06)\n"},
      {"report " + t + " --broadcast-factor 1e400",
       "memlens: --broadcast-factor: number '1e400' out of range (expected from 1 to 1e+06)\n"},
      {"check " + t + " --max-peak 99999999999TiB", "memlens: --max-peak: invalid byte size '99999999999TiB' (too large)\n"},
      {"replay " + t + " --capacity 0", "memlens: --capacity: 0 is too small (at least 1 bytes)\n"},
      // Every number flag through the one reader: no hex, no spaces, and empty is not absent.
      {"record --stack-depth 0x10 -- true",
       "memlens: --stack-depth: invalid count '0x10' (expected a whole number from 1 to 32)\n"},
      {"record --stack-depth ' 5' -- true",
       "memlens: --stack-depth: invalid count ' 5' (expected a whole number from 1 to 32)\n"},
      {"check " + t + " --max-peak ''", "memlens: --max-peak: invalid byte size '' (expected e.g. 16GiB, 512MiB or 1048576)\n"},
      {"replay " + t + " --capacity ''", "memlens: --capacity: invalid byte size '' (expected e.g. 16GiB, 512MiB or 1048576)\n"},
      {"check " + t + " --max-peak 1KiB --junit /proc/memlens-cannot-write-here.xml",
       "memlens: --junit /proc/memlens-cannot-write-here.xml: cannot write: No such file or directory\n"},
  };
  for (const auto& [args, message] : cases) {
    Run r = run(args);
    INFO(args);
    CHECK(r.status == 2);
    CHECK(r.out == message);
  }
}

TEST_CASE("memlens never blocks on a FIFO named as input", "[cli][hostile]") {
  std::string fifo = temp("input.fifo");
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const std::string f = quote(fifo);
  // `timeout` turns the old hang into a failure instead of a stuck test run.
  for (const std::string& args : {"report " + f, "replay " + f, "check " + quote(lr()) + " --baseline " + f}) {
    Run r = run_command("timeout 20 " + quote(MEMLENS_BIN) + " " + args);
    INFO(args << "\n" << r.out);
    CHECK(r.status == 2);
    CHECK(r.out == "memlens: " + fifo + ": cannot open: not a regular file\n");
  }
  fs::remove(fifo);
}

TEST_CASE("memlens reports a checksum-valid trace with ids past every table", "[cli][hostile]") {
  std::string path;
  {
    TraceBuilder t("cli-sites");
    t.segment(0x7f0000000000, 1 << 21);
    t.alloc(0x7f0000000000, 4096, 0xFFFFFFFFu);
    t.alloc(0x7f0000001000, 4096, 0x40000000u);
    t.read();
    path = temp("sites.memtrace");
    fs::copy_file(t.path(), path, fs::copy_options::overwrite_existing);
  }
  Run r = run("report " + quote(path));
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("8.00 KiB") != std::string::npos);
  fs::remove(path);
}

TEST_CASE("memlens names a trace once in a warning about a chunk that does not decode", "[cli][hostile]") {
  std::string path = temp("bad-chunk.memtrace");
  std::string bytes = slurp(lr());
  // The last events chunk, found by walking the chunk headers from the header to the footer.
  std::uint64_t footer = get_le<std::uint64_t>(bytes, bytes.size() - 16);
  std::size_t last = 0;
  for (std::size_t at = 16 + get_le<std::uint32_t>(bytes, 12) + 4; at < footer; at += 32 + get_le<std::uint32_t>(bytes, at + 24))
    if (bytes[at + 4] == 1) last = at;
  REQUIRE(last > 0);
  std::string raw(std::size_t{4} * get_le<std::uint32_t>(bytes, last + 8), '\0');
  raw[0] = 99;
  write_bytes(path, with_payload(bytes, last, raw));
  Run r = run("summary " + quote(path));
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("memlens: warning: " + path + ": corrupt events chunk at offset " + std::to_string(last) +
                   " (unknown event kind 99); read ") == 0);
  CHECK(r.out.find(path, r.out.find(path) + 1) == std::string::npos);
  fs::remove(path);
}

TEST_CASE("a recorder that cannot write says so once and lets the program run on", "[cli][hostile]") {
  // The program linked with the recorder, straight onto a full disk: its run is its own.
  Run full = run_command("MEMLENS_TRACE=/dev/full " + quote(LINEAR_REGRESSION_BIN) + " 20");
  INFO(full.out);
  CHECK(full.status == 0);
  CHECK(full.out.find("w = ") != std::string::npos);  // it ran to its end
  std::size_t said = 0;
  for (std::size_t at = 0; (at = full.out.find("memlens: recording stopped: /dev/full: ", at)) != std::string::npos; ++at) ++said;
  CHECK(said == 1);
  CHECK(full.out.find("terminate") == std::string::npos);
  // memlens record refuses a trace it could never read back, before running anything.
  Run rec = run("record -o /dev/full -- " + quote(LINEAR_REGRESSION_BIN) + " 20");
  CHECK(rec.status == 2);
  CHECK(rec.out == "memlens: /dev/full: not a regular file: give a file to write the trace to\n");
  CHECK(fs::exists("/dev/full"));
}

TEST_CASE("bytes that are not UTF-8 in a trace's strings come out as U+FFFD in every JSON output", "[cli][hostile]") {
  TraceBuilder t("not-utf8");
  const std::uint32_t site = t.writer().intern_site("caf\xe9.py", 7, "m\xff", memlens::profiler::Language::Python);
  t.segment(0x1000, 1 << 20);
  t.alloc(0x1000, 4096, site);
  t.read();
  const std::string trace = t.path(), out = temp("not-utf8.out"), db = temp("not-utf8.sqlite");
  const std::string replacement = "caf\xef\xbf\xbd.py";
  for (const std::string args : {"report --format json %T", "report --format html %T -o %O", "export %T --json %O",
                                 "export %T --chrome %O", "history add %T --commit abc --db %D"}) {
    std::string a = args;
    a.replace(a.find("%T"), 2, quote(trace));
    if (auto at = a.find("%O"); at != std::string::npos) a.replace(at, 2, quote(out));
    if (auto at = a.find("%D"); at != std::string::npos) a.replace(at, 2, quote(db));
    Run r = run(a);
    INFO(a << "\n" << r.out.substr(0, 400));
    CHECK(r.status == 0);
    if (args.find("history") != std::string::npos) {
      CHECK(fs::exists(db));
      continue;
    }
    const std::string text = args.find("%O") != std::string::npos ? slurp(out) : r.out;
    if (args.find("chrome") != std::string::npos)
      CHECK_NOTHROW(nlohmann::json::parse(text));  // names no site, but valid JSON (UTF-8) all the same
    else CHECK(text.find(replacement) != std::string::npos);
  }
  // A history add that fails leaves no new database behind.
  fs::remove(db);
  Run r = run("history add " + quote(trace) + " --commit abc --device cuda:7 --db " + quote(db));
  CHECK(r.status == 2);
  CHECK_FALSE(fs::exists(db));
  fs::remove(out);
}

TEST_CASE("replay reserves no address space for the device it simulates: it runs under a ulimit -v", "[cli][hostile]") {
#ifdef MEMLENS_SANITIZED
  WARN("skipped: a sanitized memlens maps terabytes of shadow memory, which no ulimit -v allows");
  return;
#endif
  // A 16 GiB device used to reserve 128 GiB of addresses up front; its bytes are never touched.
  Run r = run_command("ulimit -v 1000000 && " + quote(MEMLENS_BIN) + " replay " + quote(lr()) +
                      " --capacity 16GiB --alloc-conf expandable_segments:True");
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("change: peak reserved") != std::string::npos);
}
