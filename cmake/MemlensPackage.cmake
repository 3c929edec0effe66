# Installing memlens for other projects: headers, the libraries as a relocatable CMake
# package with namespaced targets (find_package(memlens 0.2) then memlens::runtime,
# memlens::recorder, ...), a version file, memlens.pc for pkg-config, and a .deb by CPack.
include(CMakePackageConfigHelpers)

set(_memlens_libraries memlens_common:common memlens_allocator:allocator memlens_runtime:runtime memlens_trace:trace memlens_recorder:recorder
    memlens_replay:replay memlens_analysis:analysis memlens_snapshot:snapshot memlens_input:input)
if(MEMLENS_HAVE_CUDA)
  list(APPEND _memlens_libraries memlens_cuda_kernels:cuda_kernels)
endif()
foreach(entry IN LISTS _memlens_libraries)
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 target)
  list(GET parts 1 name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS ${target} EXPORT memlensTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endforeach()
foreach(library common runtime/allocator runtime/tensor profiler/trace profiler/recorder profiler/analysis snapshot input)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${library}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

set(_memlens_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/memlens)
install(EXPORT memlensTargets NAMESPACE memlens:: DESTINATION ${_memlens_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memlensConfig.cmake.in
  ${PROJECT_BINARY_DIR}/install/memlensConfig.cmake INSTALL_DESTINATION ${_memlens_cmake_dir}
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/install/memlensConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/install/memlensConfig.cmake ${PROJECT_BINARY_DIR}/install/memlensConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/MemlensMemoryTest.cmake ${PROJECT_SOURCE_DIR}/cmake/MemlensRunMemoryTest.cmake
        DESTINATION ${_memlens_cmake_dir})

set(MEMLENS_PC_CUDA_LIBS "")
if(MEMLENS_HAVE_CUDA)
  set(MEMLENS_PC_CUDA_LIBS "-lmemlens_cuda_kernels -L${CUDAToolkit_LIBRARY_DIR} -lcublas -lcudart")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/memlens.pc.in ${PROJECT_BINARY_DIR}/install/memlens.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/install/memlens.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB: one package with the commands, the viewer, headers, libraries and the
# CMake package, installed under /usr.
set(CPACK_PACKAGE_NAME memlens)
set(CPACK_PACKAGE_VENDOR "memlens")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "memory profiler and diagnostics for tensor programs")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "memlens developers <memlens@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What a program built against the headers and static libraries needs too.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libzstd-dev, libdw-dev, zlib1g-dev, nlohmann-json3-dev, libabsl-dev, libopenblas-dev, libsqlite3-dev, pkgconf")
include(CPack)
