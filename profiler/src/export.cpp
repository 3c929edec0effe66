#include "memlens/profiler/export.hpp"

#include <map>
#include <nlohmann/json.hpp>

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
      events.push_back({{"name", name + " (" + device_name(r, e.device) + ")"}, {"ph", "C"}, {"ts", ts}, {"pid", pid},
                        {"args", {{"bytes", static_cast<std::int64_t>(value)}}}});
    };
    switch (e.kind) {
      case EventKind::Alloc:
        counter("allocated", allocated[e.device] += e.size);
        break;
      case EventKind::FreeRequested:
        counter("allocated", allocated[e.device] -= e.size);
        break;
      case EventKind::SegmentAlloc:
        counter("reserved", reserved[e.device] += e.size);
        break;
      case EventKind::SegmentFree:
        counter("reserved", reserved[e.device] -= e.size);
        break;
      case EventKind::Oom:
        events.push_back({{"name", "OOM (" + device_name(r, e.device) + ")"}, {"ph", "i"}, {"s", "g"}, {"ts", ts},
                          {"pid", pid}, {"tid", e.thread}, {"args", {{"requested", e.size}, {"site", r.site_location(e.site)}}}});
        break;
      case EventKind::Step:
        events.push_back({{"name", "step " + std::to_string(e.step)}, {"ph", "i"}, {"s", "g"}, {"ts", ts}, {"pid", pid},
                          {"tid", e.thread}});
        break;
      case EventKind::ScopeBegin:
      case EventKind::ScopeEnd:
        events.push_back({{"name", r.string(e.name)}, {"ph", e.kind == EventKind::ScopeBegin ? "B" : "E"}, {"ts", ts},
                          {"pid", pid}, {"tid", e.thread}, {"cat", "scope"}});
        break;
      case EventKind::Op: {
        double dur = static_cast<double>(e.duration_ns) / 1000.0;
        events.push_back({{"name", r.string(e.name)}, {"ph", "X"}, {"ts", ts - dur}, {"dur", dur}, {"pid", pid},
                          {"tid", e.thread}, {"cat", "op"},
                          {"args", {{"output", shape_json(e.shape)}, {"bytes", e.size}, {"broadcast", e.broadcast},
                                    {"site", r.site_location(e.site)}}}});
        break;
      }
      default: break;
    }
  });
  json doc = {{"traceEvents", events},
              {"displayTimeUnit", "ns"},
              {"metadata", {{"program", r.header().program}, {"allocator_config", r.header().allocator_config}}}};
  out << doc.dump() << "\n";
}

void export_json_events(const TraceReader& r, std::ostream& out) {
  r.for_each([&](const Event& e) {
    json j = {{"kind", kind_name(e.kind)}, {"t_ns", e.time_ns}, {"thread", e.thread}, {"device", device_name(r, e.device)}};
    switch (e.kind) {
      case EventKind::SegmentAlloc:
      case EventKind::SegmentFree:
        j.update({{"address", e.address}, {"size", e.size}, {"stream", e.stream}, {"pool", e.sub ? "large" : "small"}});
        break;
      case EventKind::Alloc:
        j.update({{"address", e.address}, {"size", e.size}, {"requested", e.requested}, {"stream", e.stream},
                  {"storage", e.storage}, {"category", category_name(static_cast<Category>(e.sub))}});
        break;
      case EventKind::FreeRequested:
      case EventKind::FreeCompleted:
        j.update({{"address", e.address}, {"size", e.size}, {"stream", e.stream}, {"storage", e.storage}});
        break;
      case EventKind::AllocFailed:
      case EventKind::Oom:
        j.update({{"requested", e.size}, {"device_free", e.free_bytes}, {"reserved", e.reserved}, {"allocated", e.allocated}});
        break;
      case EventKind::View:
        j.update({{"tensor", e.tensor}, {"storage", e.storage}, {"dtype", dtype_repr(static_cast<ScalarType>(e.dtype))}, {"view", view_kind_name(static_cast<ViewKind>(e.sub))},
                  {"sizes", shape_json(e.shape)}, {"strides", shape_json(e.strides)}, {"offset", e.offset}});
        break;
      case EventKind::Copy:
        j.update({{"from_device", device_name(r, e.device2)}, {"from_address", e.address2}, {"to_address", e.address},
                  {"bytes", e.size}, {"reason", copy_reason_name(static_cast<CopyReason>(e.sub))}});
        break;
      case EventKind::Op: {
        json inputs = json::array();
        for (std::size_t i = 0; i < e.n_inputs; ++i) inputs.push_back(shape_json(e.inputs[i]));
        j.update({{"name", r.string(e.name)}, {"inputs", inputs}, {"output", shape_json(e.shape)}, {"bytes", e.size},
                  {"broadcast", e.broadcast}, {"duration_ns", e.duration_ns}});
        break;
      }
      case EventKind::ScopeBegin:
      case EventKind::ScopeEnd: j["name"] = r.string(e.name); break;
      case EventKind::Step: j["step"] = e.step; break;
      case EventKind::Category:
        j.update({{"storage", e.storage}, {"category", category_name(static_cast<Category>(e.sub))}});
        break;
      case EventKind::AllocRetry:
        j.update({{"requested", e.requested}, {"size", e.size}, {"stream", e.stream}, {"pool", e.sub ? "large" : "small"}});
        break;
    }
    if (e.site) j["site"] = r.site_location(e.site);
    out << j.dump() << "\n";
  });
}

}  // namespace memlens::profiler
