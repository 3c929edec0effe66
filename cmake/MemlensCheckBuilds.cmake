# The sanitizer build that every `cmake --build` makes and every `ctest` runs, so CI checks
# it on each submission: this tree built again in <build>/sanitized with AddressSanitizer
# and UBSan, by Clang when it is installed (then the fuzz targets are real libFuzzer
# fuzzers, cmake/MemlensFuzz.cmake) or else by this compiler. It builds a representative
# subset: the memlens command, the trace, analysis, CLI and snapshot tests, and the fuzz
# targets.
# ctest runs them as two tests: "sanitized_tests" (label asan) and "sanitized_fuzz" (fuzz).
# -DMEMLENS_CHECK_BUILDS=OFF skips it; a sanitizer build never nests another.
option(MEMLENS_CHECK_BUILDS "build and test the sanitizer and fuzz sub-build" ON)
if(NOT MEMLENS_CHECK_BUILDS OR MEMLENS_SANITIZE)
  return()
endif()

find_program(MEMLENS_CLANG clang)
find_program(MEMLENS_CLANGXX clang++)
if(MEMLENS_CLANG AND MEMLENS_CLANGXX)
  set(_compilers -DCMAKE_C_COMPILER=${MEMLENS_CLANG} -DCMAKE_CXX_COMPILER=${MEMLENS_CLANGXX})
else()
  set(_compilers -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
endif()
cmake_host_system_information(RESULT _cores QUERY NUMBER_OF_LOGICAL_CORES)
set(_dir ${PROJECT_BINARY_DIR}/sanitized)
set(_targets memlens linear_regression linear_regression_fixed leak_loss_history
             analysis_tests profiler_tests cli_tests snapshot_tests trace_reader_fuzz report_fuzz snapshot_fuzz)
include(ExternalProject)
ExternalProject_Add(sanitized
  SOURCE_DIR ${PROJECT_SOURCE_DIR}
  BINARY_DIR ${_dir}
  # -O1 -g1: a quarter of -O2 -g's compile time under the sanitizers, with line tables for reports.
  CMAKE_ARGS ${_compilers} -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DMEMLENS_SANITIZE=address,undefined
             -DMEMLENS_VIEWER=OFF -DMEMLENS_CUDA=OFF -DMEMLENS_CHECK_BUILDS=OFF
  BUILD_COMMAND ${CMAKE_COMMAND} --build ${_dir} --parallel ${_cores} --target ${_targets}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON)

# The sub-build registers every test of the tree; those of targets it does not build
# (the runtime's, the recorder's, the benchmarks') are left out.
add_test(NAME sanitized_tests COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${_dir} --output-on-failure -j${_cores}
  -LE "fuzz|bench" -E "NOT_BUILT|outside memlens")
set_tests_properties(sanitized_tests PROPERTIES LABELS asan TIMEOUT 1200)
add_test(NAME sanitized_fuzz COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${_dir} --output-on-failure -L fuzz)
set_tests_properties(sanitized_fuzz PROPERTIES LABELS fuzz TIMEOUT 600)
