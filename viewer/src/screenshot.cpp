#include "screenshot.hpp"

#include <GL/gl.h>
#include <stb_image_write.h>

#include <stdexcept>
#include <vector>

namespace memlens::viewer {

void write_screenshot(const std::string& path, int width, int height) {
  std::vector<unsigned char> pixels(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's rows start at the bottom; PNG's at the top.
  stbi_flip_vertically_on_write(1);
  if (!stbi_write_png(path.c_str(), width, height, 4, pixels.data(), width * 4))
    throw std::runtime_error(path + ": cannot write the screenshot");
}

}  // namespace memlens::viewer
