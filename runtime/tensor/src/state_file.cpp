// The state file: "memlens-state 1\n", an entry count, then per entry its name, dtype,
// dims and raw bytes (little-endian, as the machine writes them). Every length is checked
// against what the file still holds before anything is sized by it.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "memlens/tensor/nn.hpp"
#include "tensor_internal.hpp"

namespace memlens::nn {

namespace {

constexpr char kMagic[] = "memlens-state 1\n";

void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

struct Reader {
  const std::string& path;
  const std::string& data;
  std::size_t at = 0;
  [[noreturn]] void fail(const std::string& why) const { throw Error(path + ": not a memlens state file (" + why + ")"); }
  std::uint64_t u64() {
    if (data.size() - at < 8) fail("truncated");
    std::uint64_t v;
    std::memcpy(&v, data.data() + at, 8);
    at += 8;
    return v;
  }
  std::string bytes(std::uint64_t n) {
    if (n > data.size() - at) fail("truncated");
    std::string s = data.substr(at, static_cast<std::size_t>(n));
    at += static_cast<std::size_t>(n);
    return s;
  }
};

}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::state_dict() const {
  MEMLENS_API_ENTRY();
  // Detached, as PyTorch's: the entries share the module's storage but are no part of
  // its graph, so what a caller computes from them records no gradient.
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : params_) out.emplace_back(name, t.detach());
  for (const auto& [name, t] : buffers_) out.emplace_back(name, t.detach());
  for (auto& [prefix, child] : children_)
    for (auto& [name, t] : child->state_dict()) out.emplace_back(prefix + "." + name, t);
  return out;
}

void save(const Module& module, const std::string& path) {
  MEMLENS_API_ENTRY();
  std::string out(kMagic);
  auto state = module.state_dict();
  put_u64(out, state.size());
  for (auto& [name, t] : state) {
    put_u64(out, name.size());
    out += name;
    put_u64(out, static_cast<std::uint64_t>(t.dtype()));
    put_u64(out, static_cast<std::uint64_t>(t.dim()));
    for (auto d : t.sizes()) put_u64(out, static_cast<std::uint64_t>(d));
    Tensor host = t.detach().to(kCPU).contiguous();
    put_u64(out, host.nbytes());
    out.append(static_cast<const char*>(host.raw_data()), host.nbytes());
  }
  const std::string partial = path + ".partial";
  {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    if (!f || !f.write(out.data(), static_cast<std::streamsize>(out.size())) || !f.flush()) {
      std::error_code ignored;
      std::filesystem::remove(partial, ignored);
      throw Error(path + ": cannot write the state file");
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    throw Error(path + ": cannot write the state file (" + ec.message() + ")");
  }
}

void load(Module& module, const std::string& path) {
  MEMLENS_API_ENTRY();
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open the state file");
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Reader in{path, data};
  if (in.bytes(sizeof kMagic - 1) != kMagic) in.fail("bad magic");
  std::map<std::string, Tensor> read;
  for (std::uint64_t n = in.u64(), i = 0; i < n; ++i) {
    std::string name = in.bytes(in.u64());
    std::uint64_t type = in.u64(), ndim = in.u64();
    if (type >= kScalarTypeCount) in.fail("unknown dtype " + std::to_string(type));
    if (ndim > 64) in.fail(std::to_string(ndim) + " dims");
    Shape dims;
    std::uint64_t count = 1;
    for (std::uint64_t d = 0; d < ndim; ++d) {
      std::uint64_t size = in.u64();
      if (size > data.size() || (size && count > data.size() / size)) in.fail("sizes larger than the file");
      dims.push_back(static_cast<std::int64_t>(size));
      count *= size;
    }
    const auto dtype = static_cast<ScalarType>(type);
    std::uint64_t nbytes = in.u64();
    if (nbytes != count * element_size(dtype)) in.fail(name + " holds " + std::to_string(nbytes) + " bytes for its shape");
    std::string bytes = in.bytes(nbytes);
    Tensor t = empty(dims, dtype);
    if (nbytes) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
    read[name] = t;
  }
  if (in.at != data.size()) in.fail("bytes after the last entry");
  // Every check first, then the copies: a file that does not fit changes nothing.
  auto state = module.state_dict();
  for (auto& [name, t] : state) {
    auto it = read.find(name);
    if (it == read.end()) throw Error(path + ": Missing key in state_dict: \"" + name + "\"");
    if (it->second.sizes() != t.sizes())
      throw ShapeError(path + ": size mismatch for " + name + ": copying a param with shape " + shape_str(it->second.sizes()) +
                       " from checkpoint, the shape in current model is " + shape_str(t.sizes()) + ".");
    if (it->second.dtype() != t.dtype())
      throw TypeError(path + ": dtype mismatch for " + name + ": " + std::string(dtype_repr(it->second.dtype())) +
                      " in the file, " + std::string(dtype_repr(t.dtype())) + " in the model");
  }
  if (read.size() != state.size())
    for (const auto& entry : read)
      if (std::none_of(state.begin(), state.end(), [&](auto& e) { return e.first == entry.first; }))
        throw Error(path + ": Unexpected key in state_dict: \"" + entry.first + "\"");
  NoGradGuard no_grad;
  for (auto& [name, t] : state) Tensor(t).copy_(read.at(name));
}

}  // namespace memlens::nn
