# memlens_add_memory_test: a ctest test that records a program under `memlens record`
# and gates it with `memlens check`.
#
#   memlens_add_memory_test(NAME lr_memory COMMAND $<TARGET_FILE:train> --epochs 2
#                           MAX_PEAK 64MiB NO_LEAKS BASELINE ${CMAKE_CURRENT_SOURCE_DIR}/lr.baseline.json)
#
# Options: NO_LEAKS, NO_BROADCAST; values: MAX_PEAK, MAX_RESERVED, MAX_LEAKED, BASELINE,
# TOLERANCE (default 5%), DEVICE (which device the limits speak of), STACKS. The trace is
# kept as <build dir>/<NAME>.memtrace for `memlens report` when the test fails.
# MEMLENS_EXECUTABLE names the memlens binary (set by memlensConfig.cmake or the memlens
# build itself); otherwise `memlens` is looked up on PATH.
set(_MEMLENS_RUN_MEMORY_TEST "${CMAKE_CURRENT_LIST_DIR}/MemlensRunMemoryTest.cmake")

function(memlens_add_memory_test)
  cmake_parse_arguments(PARSE_ARGV 0 M "NO_LEAKS;NO_BROADCAST;STACKS"
                        "NAME;MAX_PEAK;MAX_RESERVED;MAX_LEAKED;BASELINE;TOLERANCE;DEVICE" "COMMAND")
  if(NOT M_NAME OR NOT M_COMMAND)
    message(FATAL_ERROR "memlens_add_memory_test: NAME and COMMAND are required")
  endif()
  if(M_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memlens_add_memory_test(${M_NAME}): unknown arguments ${M_UNPARSED_ARGUMENTS}")
  endif()
  set(memlens "${MEMLENS_EXECUTABLE}")
  if(NOT memlens)
    find_program(MEMLENS_PROGRAM memlens REQUIRED)
    set(memlens "${MEMLENS_PROGRAM}")
  endif()
  set(check "")
  foreach(limit MAX_PEAK MAX_RESERVED MAX_LEAKED BASELINE TOLERANCE DEVICE)
    if(DEFINED M_${limit})
      string(TOLOWER "${limit}" flag)
      string(REPLACE "_" "-" flag "${flag}")
      list(APPEND check "--${flag}" "${M_${limit}}")
    endif()
  endforeach()
  if(M_NO_LEAKS)
    list(APPEND check --no-leaks)
  endif()
  if(M_NO_BROADCAST)
    list(APPEND check --no-broadcast)
  endif()
  set(record "")
  if(M_STACKS)
    set(record --stacks)
  endif()
  # Lists travel to the script with | for ; (a -D value cannot hold a list).
  string(REPLACE ";" "|" command "${M_COMMAND}")
  string(REPLACE ";" "|" check "${check}")
  add_test(NAME ${M_NAME}
           COMMAND ${CMAKE_COMMAND} "-DMEMLENS=${memlens}" "-DTRACE=${CMAKE_CURRENT_BINARY_DIR}/${M_NAME}.memtrace"
                   "-DPROGRAM=${command}" "-DCHECK=${check}" "-DRECORD=${record}" -P "${_MEMLENS_RUN_MEMORY_TEST}")
endfunction()
