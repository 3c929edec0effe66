# cmake -DSOURCE_DIR=... -DCLANG_FORMAT=... -P MemlensCheckFormat.cmake: every C++ and CUDA
# source of the tree is as clang-format (.clang-format) would write it.
cmake_minimum_required(VERSION 3.25)
set(files "")
foreach(dir common runtime profiler snapshot input cli viewer samples tests bench fuzz)
  file(GLOB_RECURSE found ${SOURCE_DIR}/${dir}/*.cpp ${SOURCE_DIR}/${dir}/*.hpp ${SOURCE_DIR}/${dir}/*.cu ${SOURCE_DIR}/${dir}/*.cuh)
  list(APPEND files ${found})
endforeach()
list(LENGTH files n)
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files} RESULT_VARIABLE rc ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "not formatted (run clang-format -i on them):\n${out}")
endif()
message(STATUS "format: ${n} files as .clang-format writes them")
