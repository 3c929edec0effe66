// The real memlens-viewer in a real window under Xvfb (Mesa's software OpenGL), on a
// trace recorded from a sample: its screenshots must be the right size, not blank, hold
// the plot's colours in the timeline, and change with the tab.
#include <stb_image.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <memlens/trace/trace_reader.hpp>
#include <regex>
#include <set>

#include "memlens_cli.hpp"

using namespace memlens::test;

namespace {

struct Image {
  int width = 0, height = 0;
  std::vector<unsigned char> rgba;
  std::array<unsigned char, 3> at(int x, int y) const {
    auto i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 4;
    return {rgba[i], rgba[i + 1], rgba[i + 2]};
  }
};

Image load_png(const std::string& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.width, &img.height, &channels, 4);
  REQUIRE(data != nullptr);
  img.rgba.assign(data, data + static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4);
  stbi_image_free(data);
  return img;
}

Run viewer(const std::string& args) {
  return run_command(std::string(VIEWER_ENV) + "xvfb-run -a -s '-screen 0 1920x1200x24' " + quote(VIEWER_BIN) + " " + args);
}

bool have_xvfb() { return std::system("command -v xvfb-run > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("memlens-viewer: screenshots of the memory and leaks views", "[viewer]") {
  if (!have_xvfb()) {
    WARN("skipped: xvfb-run is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  std::string trace = recorded("viewer-leak", LEAK_LOSS_HISTORY_BIN, "12");
  std::string memory_png = temp("memory.png"), leaks_png = temp("leaks.png");
  Run m = viewer(quote(trace) + " --screenshot " + quote(memory_png) + " --size 1200x800 --cursor peak");
  INFO(m.out);
  REQUIRE(m.status == 0);
  Image a = load_png(memory_png);
  CHECK(a.width == 1200);
  CHECK(a.height == 800);

  std::set<std::array<unsigned char, 3>> colours;
  for (int y = 0; y < a.height; y += 4)
    for (int x = 0; x < a.width; x += 4) colours.insert(a.at(x, y));
  CHECK(colours.size() > 20);  // not blank

  // The timeline (the upper part) holds the stacked categories and the reserved line.
  auto count = [&](const Image& img, std::array<unsigned char, 3> c, int y_end) {
    int n = 0;
    for (int y = 0; y < y_end; ++y)
      for (int x = 0; x < img.width; ++x) n += img.at(x, y) == c;
    return n;
  };
  int upper = a.height / 2;
  CHECK(count(a, {52, 168, 83}, upper) > 100);    // activation
  CHECK(count(a, {158, 158, 158}, upper) > 100);  // unlabelled
  CHECK(count(a, {255, 80, 80}, upper) > 50);     // reserved

  Run l = viewer(quote(trace) + " --screenshot " + quote(leaks_png) + " --size 1200x800 --tab leaks");
  REQUIRE(l.status == 0);
  Image b = load_png(leaks_png);
  REQUIRE(b.rgba.size() == a.rgba.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.rgba.size(); i += 4) differing += a.rgba[i] != b.rgba[i] || a.rgba[i + 1] != b.rgba[i + 1];
  CHECK(differing > 1000);

  // Stacked by the top sites: the same frame, other colours in the timeline.
  std::string sites_png = temp("sites.png");
  REQUIRE(viewer(quote(trace) + " --screenshot " + quote(sites_png) + " --size 1200x800 --cursor peak --stack site").status == 0);
  Image c = load_png(sites_png);
  CHECK(count(c, {52, 168, 83}, upper) < count(a, {52, 168, 83}, upper) / 2);  // no longer by category
  std::filesystem::remove(memory_png);
  std::filesystem::remove(leaks_png);
  std::filesystem::remove(sites_png);
}

TEST_CASE("memlens-viewer: a bad file is one line and exit 2, never a crash", "[viewer]") {
  if (!have_xvfb()) {
    WARN("skipped: xvfb-run is not installed");
    return;
  }
  std::string junk = temp("viewer-junk.memtrace");
  std::ofstream(junk) << "not a trace";
  Run r = viewer(quote(junk) + " --screenshot " + quote(temp("never.png")));
  CHECK(r.status == 2);
  CHECK(r.out.find("memlens-viewer: " + junk + ": not a memlens trace (bad magic)") != std::string::npos);
  Run no_display = run_command(std::string(VIEWER_ENV) + "DISPLAY= " + quote(VIEWER_BIN) + " " + quote(junk));
  CHECK(no_display.status == 2);
  CHECK(std::count(no_display.out.begin(), no_display.out.end(), '\n') == 1);
  CHECK(no_display.out.find("memlens-viewer: cannot open a window: ") == 0);
  Run bad_tab = viewer("--tab nowhere");
  CHECK(bad_tab.status == 2);
  CHECK(bad_tab.out.find("memlens-viewer: --tab: unknown tab 'nowhere'") != std::string::npos);
  std::filesystem::remove(junk);
}

TEST_CASE("memlens-viewer: a real PyTorch snapshot opens and draws its memory over time", "[viewer][snapshot]") {
  if (!have_xvfb()) {
    WARN("skipped: xvfb-run is not installed");
    return;
  }
  const std::string snapshot = std::string(TORCH_SNAPSHOTS_DIR) + "/silmont_mem_snapshot.pickle";
  if (!std::filesystem::exists(snapshot)) {
    WARN("skipped: " << TORCH_SNAPSHOTS_DIR << " is absent (the snapshots live in the project's shared folder)");
    return;
  }
  std::string png = temp("snapshot.png");
  Run r = viewer(quote(snapshot) + " --screenshot " + quote(png) + " --size 1200x800 --cursor peak --stack site");
  INFO(r.out);
  REQUIRE(r.status == 0);
  Image img = load_png(png);
  CHECK(img.width == 1200);
  std::set<std::array<unsigned char, 3>> colours;
  int axis_text = 0;  // the axes' tick labels have a colour of their own
  for (int y = 0; y < img.height / 2; ++y)
    for (int x = 0; x < img.width; ++x) {
      colours.insert(img.at(x, y));
      axis_text += img.at(x, y) == std::array<unsigned char, 3>{200, 200, 120};
    }
  CHECK(colours.size() > 20);  // the timeline is drawn, not an empty window
  CHECK(axis_text > 200);      // time and bytes axes with their labels
  std::filesystem::remove(png);
}

namespace {

// Pixels of exactly this colour in the image's top `rows` (where the summary line is).
int colour_in_top(const Image& img, std::array<unsigned char, 3> c, int rows) {
  int n = 0;
  for (int y = 0; y < rows && y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) n += img.at(x, y) == c;
  return n;
}

// "wrote PATH (STATE, N events, S steps)" from the viewer's output.
struct Shot {
  std::string state;
  std::uint64_t events = 0, steps = 0;
};
Shot shot_line(const std::string& out, const std::string& path) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("wrote " + path + R"( \((\w+), (\d+) events, (\d+) steps\))")));
  return {m[1], std::stoull(m[2]), std::stoull(m[3])};
}

constexpr std::array<unsigned char, 3> kRecordingRed{255, 89, 89}, kOrange{255, 153, 51}, kFinishedGreen{102, 217, 102};

}  // namespace

TEST_CASE("memlens-viewer --follow: the timeline grows while a program records; kill -9 leaves what it flushed",
          "[viewer][follow]") {
  if (!have_xvfb()) {
    WARN("skipped: xvfb-run is not installed");
    return;
  }
  const std::string trace = temp("viewer-follow.memtrace"), during = temp("follow-during.png"), after = temp("follow-after.png");
  std::remove(trace.c_str());
  Background viewer({"xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", VIEWER_BIN, "--follow", trace, "--size", "1000x700",
                     "--screenshot-while-recording", during, "--screenshot", after},
                    temp("viewer-follow.out"));
  Background recording({MEMLENS_BIN, "record", "-o", trace, "--", MLP_CLASSIFIER_BIN, "--steps", "100000000"},
                       temp("viewer-follow-record.out"));
  REQUIRE(viewer.wait_for_output("wrote " + during, std::chrono::seconds(60)));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // it records on
  const std::int64_t pid = memlens::profiler::TraceReader(trace).header().pid;
  REQUIRE(kill(static_cast<pid_t>(pid), SIGKILL) == 0);
  CHECK(recording.wait(std::chrono::seconds(30)) == 137);
  REQUIRE(viewer.wait(std::chrono::seconds(60)) == 0);

  const std::string out = viewer.output();
  INFO(out);
  const Shot a = shot_line(out, during), b = shot_line(out, after);
  CHECK(a.state == "recording");
  CHECK(a.steps > 0);
  CHECK(b.state == "stopped");
  CHECK(b.events > a.events);  // grown between the two moments
  CHECK(b.steps > a.steps);
  // The second shows every event of the file's whole chunks, read here by a reader of its own.
  memlens::profiler::TraceReader whole(trace);
  CHECK_FALSE(whole.has_footer());
  CHECK(b.events == whole.totals().events);
  const Image first = load_png(during), second = load_png(after);
  CHECK(colour_in_top(first, kRecordingRed, 30) > 4);  // "[recording]" (its glyphs' solid pixels)
  CHECK(colour_in_top(first, kOrange, 60) == 0);
  CHECK(colour_in_top(second, kRecordingRed, 30) == 0);
  CHECK(colour_in_top(second, kOrange, 60) > 4);  // "[stopped: ... (killed?) ...]" and the warning
  std::filesystem::remove(during);
  std::filesystem::remove(after);
}

TEST_CASE("memlens record --view: the program and a viewer following its trace, together", "[viewer][follow]") {
  if (!have_xvfb()) {
    WARN("skipped: xvfb-run is not installed");
    return;
  }
  const std::string trace = temp("record-view.memtrace"), during = temp("record-view-during.png"),
                    after = temp("record-view-after.png"), wrapper = temp("viewer-wrapper.sh");
  // MEMLENS_VIEWER names the viewer to start: here one that also takes the screenshots.
  std::ofstream(wrapper) << "#!/bin/sh\nexec " << quote(VIEWER_BIN) << " \"$@\" --size 1000x700 --screenshot-while-recording "
                         << quote(during) << " --screenshot " << quote(after) << "\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  Run r = run_command("MEMLENS_VIEWER=" + quote(wrapper) + " xvfb-run -a -s '-screen 0 1920x1200x24' " + quote(MEMLENS_BIN) +
                      " record --view -o " + quote(trace) + " -- " + quote(MLP_CLASSIFIER_BIN) + " --steps 1500");
  INFO(r.out);
  REQUIRE(r.status == 0);
  const Shot a = shot_line(r.out, during), b = shot_line(r.out, after);
  CHECK(a.state == "recording");
  CHECK(b.state == "finished");
  CHECK(b.steps == 1500);
  CHECK(a.events < b.events);
  CHECK(r.out.find("to " + trace + ": " + std::to_string(b.events) + " events") != std::string::npos);
  CHECK(colour_in_top(load_png(after), kFinishedGreen, 30) > 4);  // "[finished]"
  std::filesystem::remove(during);
  std::filesystem::remove(after);
  std::filesystem::remove(wrapper);
}
