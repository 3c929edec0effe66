#pragma once
// Traces in other tools' formats.
#include <ostream>

#include "memlens/trace/trace_reader.hpp"

namespace memlens::profiler {

// Chrome's trace event format, which Perfetto and chrome://tracing open: counter tracks
// of allocated and reserved bytes per device, instants for OOMs and steps, slices for
// scopes and ops (on their threads).
void export_chrome_trace(const TraceReader& r, std::ostream& out);

// One JSON object per line, one line per event, with the kind's fields and the site
// resolved to "file:line" (docs/trace-format.md lists the fields).
void export_json_events(const TraceReader& r, std::ostream& out);

}  // namespace memlens::profiler
