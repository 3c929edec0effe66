#include "module_map.hpp"

#include <elf.h>
#include <link.h>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace memlens::profiler {

namespace {

std::string build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char* hex = "0123456789abcdef";
        std::string id;
        for (unsigned k = 0; k < note->n_descsz; ++k) {
          auto b = static_cast<unsigned char>(desc[k]);
          id += hex[b >> 4];
          id += hex[b & 15];
        }
        return id;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<ModuleInfo>*>(data);
  std::string path = info->dlpi_name ? info->dlpi_name : "";
  if (path.empty()) {
    if (!out->empty()) return 0;  // only the first nameless object is the executable (the vdso is another)
    char buf[PATH_MAX];
    if (!realpath("/proc/self/exe", buf)) return 0;
    path = buf;
  }
  if (path.find("linux-vdso") != std::string::npos) return 0;
  ModuleInfo m;
  m.path = path;
  m.bias = info->dlpi_addr;
  m.start = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    m.start = std::min<std::uint64_t>(m.start, info->dlpi_addr + ph.p_vaddr);
    m.end = std::max<std::uint64_t>(m.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (m.start == UINT64_MAX) return 0;
  m.build_id = build_id_of(info);
  out->push_back(std::move(m));
  return 0;
}

}  // namespace

std::vector<ModuleInfo> loaded_modules() {
  std::vector<ModuleInfo> out;
  dl_iterate_phdr(visit, &out);
  return out;
}

}  // namespace memlens::profiler
