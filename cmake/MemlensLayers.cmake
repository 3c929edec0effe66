# The libraries' layers: each folder, the public header folder it owns (memlens/NAME/) and
# the header folders it may include. Data flows one way, so no entry names a folder above
# it; the `layers` test (cmake -P MemlensCheckLayers.cmake) holds the code to this table,
# and docs/architecture.md draws it.
set(MEMLENS_LAYERS
  "common|common|"
  "runtime/allocator|allocator|common"
  "runtime/tensor|tensor|allocator,common"
  "profiler/trace|trace|common"
  "profiler/recorder|recorder|trace,tensor,allocator,common"
  "profiler/cupti||trace,common"
  "profiler/analysis|analysis|trace,allocator,common"
  "snapshot|snapshot|trace,common"
  "profiler/record_abi|record_abi|snapshot,trace,common"
  "input|input|snapshot,trace,common"
  "cli||input,analysis,snapshot,trace,allocator,common"
  "viewer||input,analysis,snapshot,trace,allocator,common")
