// The source lines around a site, when the file can be read where the viewer runs.
#include <fstream>
#include <string>
#include <vector>

#include "panels.hpp"

namespace memlens::viewer {

void draw_source(const std::string& location) {
  if (location.empty()) {
    ImGui::TextDisabled("select a row to see its source");
    return;
  }
  auto colon = location.rfind(':');
  std::string file = location.substr(0, colon);
  int line = colon == std::string::npos ? 0 : std::atoi(location.c_str() + colon + 1);
  static std::string loaded;
  static std::vector<std::string> lines;
  if (loaded != file) {
    loaded = file;
    lines.clear();
    std::ifstream in(file);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ImGui::Text("%s", location.c_str());
  if (lines.empty()) {
    ImGui::TextDisabled("(the file cannot be read here)");
    return;
  }
  for (int i = std::max(1, line - 4); i <= std::min<int>(static_cast<int>(lines.size()), line + 4); ++i) {
    const std::string& text = lines[static_cast<std::size_t>(i - 1)];
    if (i == line) ImGui::TextColored(ImVec4(1, 0.85f, 0.2f, 1), "%5d > %s", i, text.c_str());
    else ImGui::Text("%5d   %s", i, text.c_str());
  }
}

}  // namespace memlens::viewer
