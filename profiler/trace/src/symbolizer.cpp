#include "symbolizer.hpp"

#include <cxxabi.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "memlens/common/input_file.hpp"

namespace memlens::profiler {

namespace {

const Dwfl_Callbacks kOffline = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

std::string hex_of(const unsigned char* bits, int n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += hex[bits[i] >> 4];
    s += hex[bits[i] & 15];
  }
  return s;
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

// dwfl_module_getsrc finds a compile unit through .debug_aranges, which Clang does not
// emit by default: without it, walk the units and ask each whether it holds the address.
void line_from_cu_scan(Dwfl_Module* mod, Dwarf_Addr pc, SiteInfo& info) {
  Dwarf_Addr bias = 0;
  for (Dwarf_Die* cu = dwfl_module_nextcu(mod, nullptr, &bias); cu; cu = dwfl_module_nextcu(mod, cu, &bias)) {
    if (dwarf_haspc(cu, pc - bias) <= 0) continue;
    if (Dwarf_Line* line = dwarf_getsrc_die(cu, pc - bias)) {
      int lineno = 0;
      if (const char* file = dwarf_linesrc(line, nullptr, nullptr); file && dwarf_lineno(line, &lineno) == 0) {
        info.file = file;
        info.line = static_cast<std::uint32_t>(lineno);
      }
    }
    return;
  }
}

}  // namespace

Symbolizer::Symbolizer(const std::vector<ModuleInfo>& modules) {
  dwfl_ = dwfl_begin(&kOffline);
  if (!dwfl_) return;
  dwfl_report_begin(dwfl_);
  for (const auto& m : modules) {
    // A trace can come from anyone: a FIFO or a device named as a module is never opened.
    int fd = open_regular_file(m.path);
    if (fd < 0) continue;
    // On success libdwfl keeps the descriptor and closes it at dwfl_end.
    Dwfl_Module* mod = dwfl_report_elf(dwfl_, m.path.c_str(), m.path.c_str(), fd, m.bias, false);
    if (!mod) ::close(fd);
    if (!mod || m.build_id.empty()) continue;
    // A different build of the file would give wrong lines: its addresses stay unresolved.
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    if (n > 0 && hex_of(bits, n) != m.build_id) mismatched_.push_back({m.start, m.end});
  }
  dwfl_report_end(dwfl_, nullptr, nullptr);
}

Symbolizer::~Symbolizer() {
  if (dwfl_) dwfl_end(dwfl_);
}

SiteInfo Symbolizer::resolve(std::uint64_t address) {
  if (auto it = cache_.find(address); it != cache_.end()) return it->second;
  SiteInfo info;
  info.address = address;
  bool stale = false;
  for (auto [lo, hi] : mismatched_) stale = stale || (address > lo && address <= hi);
  if (dwfl_ && address > 0 && !stale) {
    Dwarf_Addr pc = address - 1;  // inside the call instruction, not after it
    if (Dwfl_Module* mod = dwfl_addrmodule(dwfl_, pc)) {
      if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
          info.file = file;
          info.line = static_cast<std::uint32_t>(lineno);
        }
      } else {
        line_from_cu_scan(mod, pc, info);
      }
      // No line for a code address: its module, or the part of it that holds the address,
      // was built without -g.
      if (info.file.empty())
        if (const char* name = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr))
          without_lines_.insert(name);
      if (const char* sym = dwfl_module_addrname(mod, pc)) info.function = demangle(sym);
    }
  }
  cache_.emplace(address, info);
  return info;
}

}  // namespace memlens::profiler
