// PyTorch snapshot -> memlens trace, in two halves: the document reader
// (snapshot_reader.cpp) reads and checks the entries and rewinds the state at dump to the
// state at the first entry; the event writer (snapshot_events.cpp) writes them as events.
#include "memlens/snapshot/snapshot_import.hpp"

#include "memlens/snapshot/py_document.hpp"
#include "snapshot_events.hpp"
#include "snapshot_run.hpp"

namespace memlens::snapshot {

SnapshotEncoding sniff_snapshot(std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5)
    return SnapshotEncoding::Pickle;
  std::size_t i = 0;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
  if (i < head.size() && (head[i] == '{' || head[i] == '[')) return SnapshotEncoding::Json;
  return SnapshotEncoding::NotSnapshot;
}

ImportSummary import_snapshot(std::string_view bytes, SnapshotEncoding encoding, const std::string& source,
                              const OpenTraceWriter& open_writer, const ImportOptions& options,
                              const std::function<void(std::size_t)>& consumed) {
  if (encoding == SnapshotEncoding::NotSnapshot) throw SnapshotError("not a PyTorch memory snapshot (neither pickle nor JSON)");
  PyDocument doc(bytes, encoding == SnapshotEncoding::Pickle ? PyDocument::Encoding::Pickle : PyDocument::Encoding::Json,
                 consumed);
  SnapshotRun run = read_snapshot_run(doc.root(), source);
  std::unique_ptr<profiler::TraceWriter> writer = open_writer(run.header);
  ImportSummary summary = write_snapshot_events(run, options, *writer);
  summary.encoding = encoding;
  return summary;
}

ImportSummary import_snapshot(std::string_view bytes, SnapshotEncoding encoding, const std::string& source,
                              const std::string& trace_path, const ImportOptions& options,
                              const std::function<void(std::size_t)>& consumed) {
  auto to_file = [&](const profiler::TraceHeader& h) { return std::make_unique<profiler::TraceWriter>(trace_path, h); };
  return import_snapshot(bytes, encoding, source, to_file, options, consumed);
}

}  // namespace memlens::snapshot
