#pragma once
// The current framebuffer as a PNG (stb's image writer, from Debian's libstb).
#include <string>

namespace memlens::viewer {

// Throws std::runtime_error naming the file when it cannot be written.
void write_screenshot(const std::string& path, int width, int height);

}  // namespace memlens::viewer
