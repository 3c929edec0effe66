// The HTML report in a real browser: headless Chromium loads the page memlens wrote for a
// recorded sample, its script runs without an error, the screenshot holds the plot's
// colours, and the finding's source line is on the page. Skips, saying so, without
// Chromium (scripts/install-deps.sh installs it).
#include <stb_image.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "memlens_cli.hpp"

using namespace memlens::test;

namespace {

const char* chromium() {
  for (const char* c : {"chromium", "chromium-browser"})
    if (run_command(std::string("command -v ") + c).status == 0) return c;
  return nullptr;
}

std::string headless(const char* browser) {
  // As root a sandbox cannot start; software rendering, no GPU.
  return std::string(browser) + " --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,900 ";
}

}  // namespace

TEST_CASE("report --format html: one self-contained page that draws in a real browser", "[html]") {
  const char* browser = chromium();
  if (!browser) {
    WARN("skipped: Chromium is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  std::string trace = recorded("html-leak", LEAK_LOSS_HISTORY_BIN, "12");
  std::string page = temp("report.html"), shot = temp("report.png");
  Run r = run("report --format html -o " + quote(page) + " " + quote(trace));
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::string html = slurp(page);
  // Self-contained: nothing fetched from anywhere.
  for (const char* outside : {"http://", "https://", "<link", " src="}) CHECK(html.find(outside) == std::string::npos);

  Run dom = run_command(headless(browser) + "--dump-dom " + quote("file://" + page));
  INFO(dom.out.substr(0, 2000));
  CHECK(dom.out.find("<body data-ready=\"1\">") != std::string::npos);  // the script ran to its end
  CHECK(dom.out.find("data-errors") == std::string::npos);              // and nothing threw
  CHECK(dom.out.find("<span class=\"kind\">growth</span>") != std::string::npos);
  // The growth finding's own source line, read here from the sample, is shown under it.
  std::string sample = slurp(LEAK_LOSS_HISTORY_SOURCE);
  auto at = sample.find("kept.push_back(val_loss);");
  REQUIRE(at != std::string::npos);
  CHECK(dom.out.find("kept.push_back(val_loss);") != std::string::npos);
  CHECK(dom.out.find("<th>peak allocated</th>") != std::string::npos);

  Run s = run_command(headless(browser) + "--screenshot=" + quote(shot) + " " + quote("file://" + page));
  INFO(s.out);
  REQUIRE(std::filesystem::exists(shot));
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &n, 3);
  REQUIRE(px);
  CHECK(w == 1200);
  CHECK(h == 900);
  auto count = [&](int red, int green, int blue) {
    int k = 0;
    for (int i = 0; i < w * h; ++i) k += px[3 * i] == red && px[3 * i + 1] == green && px[3 * i + 2] == blue;
    return k;
  };
  // Text is anti-aliased, and how many of its pixels come out in the exact colour depends
  // on the fonts the machine has: its labels are counted within a margin.
  auto near = [&](int red, int green, int blue) {
    int k = 0;
    for (int i = 0; i < w * h; ++i)
      k += std::abs(px[3 * i] - red) <= 32 && std::abs(px[3 * i + 1] - green) <= 32 && std::abs(px[3 * i + 2] - blue) <= 32;
    return k;
  };
  CHECK(count(0x34, 0xa8, 0x53) > 2000);  // activation: the leaked losses' graphs
  CHECK(count(0xff, 0x50, 0x50) > 100);   // the reserved line
  CHECK(near(0xc8, 0xc8, 0x78) > 150);    // axis labels
  stbi_image_free(px);
  std::filesystem::remove(page);
  std::filesystem::remove(shot);
}

TEST_CASE("diff --format html: two runs on one scale, and what changed", "[html]") {
  const char* browser = chromium();
  if (!browser) {
    WARN("skipped: Chromium is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  std::string a = recorded("html-a", LEAK_LOSS_HISTORY_BIN, "4"), b = recorded("html-b", LEAK_LOSS_HISTORY_BIN, "12");
  std::string page = temp("diff.html");
  Run r = run("diff --format html -o " + quote(page) + " " + quote(a) + " " + quote(b));
  INFO(r.out);
  REQUIRE(r.status == 0);
  Run dom = run_command(headless(browser) + "--dump-dom " + quote("file://" + page));
  CHECK(dom.out.find("<body data-ready=\"1\">") != std::string::npos);
  CHECK(dom.out.find("data-errors") == std::string::npos);
  CHECK(dom.out.find("<h1>memlens diff</h1>") != std::string::npos);
  for (const char* part :
       {"<h3>sim:0 in A</h3>", "<h3>sim:0 in B</h3>", "<h2>Sites that changed</h2>", "<th>peak allocated</th>"})
    CHECK(dom.out.find(part) != std::string::npos);
  // The peak's change, as the JSON diff has it.
  Run json = run("diff --format json " + quote(a) + " " + quote(b));
  auto d = nlohmann::json::parse(json.out);
  for (const auto& row : d["peak_allocated"])
    if (row["key"] == "sim:0") CHECK(row["delta"].get<std::int64_t>() > 0);
  std::filesystem::remove(page);
}
