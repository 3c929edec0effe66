#include "memlens/trace/export.hpp"

#include <map>
#include <nlohmann/json.hpp>

#include "event_fields.hpp"
#include "memlens/common/scalar_type.hpp"

namespace memlens::profiler {

namespace {

using nlohmann::json;

std::string device_name(const TraceReader& r, std::uint8_t i) {
  return i < r.header().devices.size() ? r.header().devices[i].name : "device" + std::to_string(i);
}

json shape_json(const ShapeRecord& s) {
  json a = json::array();
  for (int i = 0; i < s.ndim; ++i) a.push_back(s.dims[static_cast<std::size_t>(i)]);
  return a;
}

}  // namespace

void export_chrome_trace(const TraceReader& r, std::ostream& out) {
  json events = json::array();
  // Unsigned: a crafted trace's sizes wrap instead of overflowing; a trace that frees what
  // it never allocated shows as a negative counter, as the bytes say.
  std::map<std::uint8_t, std::uint64_t> allocated, reserved;
  std::uint64_t t0 = 0;
  bool first = true;
  const auto pid = r.header().pid;
  r.for_each([&](const Event& e) {
    if (first) t0 = e.time_ns, first = false;
    double ts = static_cast<double>(e.time_ns - t0) / 1000.0;  // microseconds
    auto counter = [&](const std::string& name, std::uint64_t value) {
      events.push_back({{"name", name + " (" + device_name(r, e.device) + ")"},
                        {"ph", "C"},
                        {"ts", ts},
                        {"pid", pid},
                        {"args", {{"bytes", static_cast<std::int64_t>(value)}}}});
    };
    switch (e.kind) {
      case EventKind::Alloc:
        counter("allocated", allocated[e.device] += e.alloc.size);
        break;
      case EventKind::FreeRequested:
        counter("allocated", allocated[e.device] -= e.free.size);
        break;
      case EventKind::SegmentAlloc:
        counter("reserved", reserved[e.device] += e.segment.size);
        break;
      case EventKind::SegmentFree:
        counter("reserved", reserved[e.device] -= e.segment.size);
        break;
      case EventKind::Oom:
        events.push_back({{"name", "OOM (" + device_name(r, e.device) + ")"},
                          {"ph", "i"},
                          {"s", "g"},
                          {"ts", ts},
                          {"pid", pid},
                          {"tid", e.thread},
                          {"args", {{"requested", e.failure.requested}, {"site", r.site_location(e.failure.site)}}}});
        break;
      case EventKind::Step:
        events.push_back({{"name", "step " + std::to_string(e.step.number)},
                          {"ph", "i"},
                          {"s", "g"},
                          {"ts", ts},
                          {"pid", pid},
                          {"tid", e.thread}});
        break;
      case EventKind::ScopeBegin:
      case EventKind::ScopeEnd:
        events.push_back({{"name", r.string(e.scope.name)},
                          {"ph", e.kind == EventKind::ScopeBegin ? "B" : "E"},
                          {"ts", ts},
                          {"pid", pid},
                          {"tid", e.thread},
                          {"cat", "scope"}});
        break;
      case EventKind::Op: {
        double dur = static_cast<double>(e.op.duration_ns) / 1000.0;
        events.push_back({{"name", r.string(e.op.name)},
                          {"ph", "X"},
                          {"ts", ts - dur},
                          {"dur", dur},
                          {"pid", pid},
                          {"tid", e.thread},
                          {"cat", "op"},
                          {"args",
                           {{"output", shape_json(e.op.output.sizes)},
                            {"dtype", dtype_repr(e.op.output.dtype)},
                            {"bytes", e.op.bytes},
                            {"broadcast", e.op.broadcast},
                            {"site", r.site_location(e.op.site)}}}});
        break;
      }
      default:
        break;
    }
  });
  json doc = {{"traceEvents", events},
              {"displayTimeUnit", "ns"},
              {"metadata", {{"program", r.header().program}, {"allocator_config", r.header().allocator_config}}}};
  out << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

namespace {

// Writes a kind's fields under the codec's names (event_fields.hpp), enums by name, ids
// resolved: the export can never miss a field the trace has.
struct JsonFields {
  static constexpr bool kNamesOnly = false;
  const TraceReader& r;
  json& j;
  void u(const char* n, std::uint64_t& v) { j[n] = v; }
  void s(const char* n, std::int64_t& v) { j[n] = v; }
  template <class T>
  void small(const char* n, T& v) {
    j[n] = v;
  }
  void enumeration(const char* n, Pool& v, std::size_t) { j[n] = v == Pool::Large ? "large" : "small"; }
  void enumeration(const char* n, Category& v, std::size_t) { j[n] = category_name(v); }
  void enumeration(const char* n, ViewKind& v, std::size_t) { j[n] = view_kind_name(v); }
  void enumeration(const char* n, CopyReason& v, std::size_t) { j[n] = copy_reason_name(v); }
  void enumeration(const char* n, ScalarType& v, std::size_t) { j[n] = dtype_repr(v); }
  void flag(const char* n, bool& v) { j[n] = v; }
  void address(const char* n, std::uint64_t& v) { j[n] = v; }
  void storage(const char* n, std::uint64_t& v) { j[n] = v; }
  void shape(const char* n, ShapeRecord& v) { j[n] = shape_json(v); }
  void tensor(const char* n, TensorRecord& v) {
    json t = {{"sizes", shape_json(v.sizes)}, {"strides", shape_json(v.strides)},
              {"dtype", dtype_repr(v.dtype)}, {"device", device_name(r, v.device)},
              {"storage", v.storage},         {"offset", v.offset}};
    if (std::string_view(n) == "input") j["inputs"].push_back(std::move(t));
    else j[n] = std::move(t);
  }
  void site(std::uint32_t& v) {
    if (v) j["site"] = r.site_location(v);
  }
  void stack(std::uint32_t& v) {
    if (v) j["stack"] = v;
  }
  void name(std::uint32_t& v) { j["name"] = r.string(v); }
  void device(const char* n, std::uint8_t& v) { j[n] = device_name(r, v); }
};

}  // namespace

void export_json_events(const TraceReader& r, std::ostream& out) {
  r.for_each([&](const Event& e) {
    json j = {{"kind", kind_name(e.kind)}, {"t_ns", e.time_ns}, {"thread", e.thread}, {"device", device_name(r, e.device)}};
    if (e.kind == EventKind::Op) j["inputs"] = json::array();
    JsonFields io{r, j};
    event_fields::fields(io, const_cast<Event&>(e));  // JsonFields only reads
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  });
}

}  // namespace memlens::profiler
