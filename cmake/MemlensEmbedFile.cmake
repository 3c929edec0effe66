# cmake -DIN=file -DOUT=header -DNAME=kName -P MemlensEmbedFile.cmake: writes a header
# holding the file's text as `inline constexpr std::string_view NAME` (a page or a script
# kept as its own file, built into the program).
file(READ "${IN}" content)
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/MemlensEmbedFile.cmake; edit that file.\n#pragma once\n#include <string_view>\n\nnamespace memlens::embedded {\ninline constexpr std::string_view ${NAME} = R\"memlens_embed(${content})memlens_embed\";\n}  // namespace memlens::embedded\n")
file(RENAME "${OUT}.tmp" "${OUT}")
