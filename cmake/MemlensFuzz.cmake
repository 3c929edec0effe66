# Fuzzing: with Clang and its libFuzzer runtime, every target memlens builds is
# instrumented for coverage (-fsanitize=fuzzer-no-link) and the targets in fuzz/ are real
# fuzzers. With another compiler the same targets are built to replay their corpus.
include(CheckCXXSourceCompiles)
set(MEMLENS_HAVE_LIBFUZZER OFF)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_cxx_source_compiles(
    "#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const unsigned char*, std::size_t) { return 0; }"
    MEMLENS_LIBFUZZER_LINKS)
  unset(CMAKE_REQUIRED_FLAGS)
  if(MEMLENS_LIBFUZZER_LINKS)
    set(MEMLENS_HAVE_LIBFUZZER ON)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  endif()
endif()
