# `cmake --install`: the shared library, its headers under include/rill (the
# tree's own layout, plus the umbrella <rill/rill.h>), the rill command, the
# visualizer page, a CMake package (find_package(Rill) -> Rill::rill) and a
# pkg-config file.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS rill EXPORT RillTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS rill_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set_target_properties(rill_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
foreach(dir runtime actors ops)
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES actors/rill.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill)
install(FILES ${PROJECT_BINARY_DIR}/runtime/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/runtime)
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/proto
        FILES_MATCHING PATTERN "*.pb.h")
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
              cmake/FindCAF.cmake DESTINATION ${RILL_CMAKE_DIR})

configure_file(cmake/rill.pc.in ${PROJECT_BINARY_DIR}/rill.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rill.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
