# `cmake --install`: the shared library, its public headers under include/rill
# (<rill/rill.h> and the headers it is made of), the rill command, the
# visualizer page, a CMake package (find_package(Rill) -> Rill::rill) and a
# pkg-config file.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS rill EXPORT RillTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS rill_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set_target_properties(rill_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
# The public API: every layer's include/rill/*.h, into <prefix>/include/rill/,
# and the program model's generated header. Users include <rill/rill.h> (or a
# topical header such as <rill/parallel_executor.h>) with one include root,
# <prefix>/include; tools/check_layers.py keeps these headers a closed facade
# (no internal path, no CAF or Boost), tools/check_install.sh builds against it.
get_property(rill_public_include_dirs GLOBAL PROPERTY RILL_PUBLIC_INCLUDE_DIRS)
foreach(dir IN LISTS rill_public_include_dirs)
  install(DIRECTORY ${dir}/rill DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/include/rill/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill)
install(FILES ${PROJECT_BINARY_DIR}/include/rill/proto/program.pb.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/proto)
if(TARGET visualizer)
  install(FILES ${PROJECT_BINARY_DIR}/tools/visualizer/index.html
          DESTINATION ${CMAKE_INSTALL_DATADIR}/rill/visualizer)
endif()

set(RILL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Rill)
install(EXPORT RillTargets NAMESPACE Rill:: DESTINATION ${RILL_CMAKE_DIR})
configure_package_config_file(cmake/RillConfig.cmake.in ${PROJECT_BINARY_DIR}/RillConfig.cmake
                              INSTALL_DESTINATION ${RILL_CMAKE_DIR})
# Before 1.0 every minor version may break: only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/RillConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/RillConfig.cmake ${PROJECT_BINARY_DIR}/RillConfigVersion.cmake
        DESTINATION ${RILL_CMAKE_DIR})

configure_file(cmake/rill.pc.in ${PROJECT_BINARY_DIR}/rill.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rill.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
