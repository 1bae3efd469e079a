# `cmake --install`: the shared library, its public headers under include/rill
# (<rill/rill.h> and what it includes, in the tree's layout), the rill command, the
# visualizer page, a CMake package (find_package(Rill) -> Rill::rill) and a
# pkg-config file.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS rill EXPORT RillTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS rill_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set_target_properties(rill_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
# The public API is <rill/rill.h>; only the headers it reaches are installed
# (`g++ -MM -I. -Ibuild actors/rill.h`), so the executor's internals — the
# actor graph, streams, tasks, the ops — stay out of the installed tree.
# tools/check_install.sh builds the examples against it: a header missing
# here fails there.
set(RILL_PUBLIC_HEADERS
    actors/channel.h actors/channel_waiter.h actors/execution_strategy.h
    actors/input_pipeline.h actors/iteration_stats.h actors/op_actor.h
    actors/parallel_executor.h actors/place_io.h actors/runtime.h actors/select.h
    actors/pserver.h actors/trace_recorder.h actors/trainer_client.h actors/wait_group.h
    actors/wire.h actors/network.h actors/unique_id_exchange.h runtime/transpiler.h
    runtime/device/device.h runtime/device/device_memory.h runtime/device/device_stream.h
    runtime/device/nccl_communicators.h
    runtime/backward.h runtime/builder.h runtime/data_type.h runtime/error.h runtime/executor.h
    runtime/gradient_compression.h
    runtime/graph/data_parallel.h runtime/graph/ssa_graph.h runtime/io/checkpoint.h
    runtime/io/program_io.h runtime/kernel_context.h runtime/op_desc.h runtime/op_registry.h
    runtime/op_schema.h runtime/optimizer.h runtime/place.h runtime/plugin.h runtime/program.h
    runtime/run_context.h runtime/scope.h runtime/selected_rows.h runtime/shape.h
    runtime/shape_context.h runtime/tensor.h runtime/thread_run_context.h)
foreach(header IN LISTS RILL_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/${dir})
endforeach()
install(FILES actors/rill.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill)
install(FILES ${PROJECT_BINARY_DIR}/runtime/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/runtime)
install(FILES ${PROJECT_BINARY_DIR}/proto/program.pb.h ${PROJECT_BINARY_DIR}/proto/wire.pb.h
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
              cmake/FindCAF.cmake DESTINATION ${RILL_CMAKE_DIR})

configure_file(cmake/rill.pc.in ${PROJECT_BINARY_DIR}/rill.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rill.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
