# Rill's library is built in layers: each folder below is one target, and the
# layers it may use are declared where it is defined. tools/check_layers.py
# reads the table this file writes (<build>/layers.json) and fails the build
# (target check_layers) and CTest (test check_layers) on any include that
# reaches a layer, or an external package, that its layer does not declare.
#
#   rill_layer(<name> DIR <folder> [DEPS <layers...>] [EXTERNAL <packages...>]
#              [SOURCES <files...>] [CUDA_SOURCES <files...>] [OUTSIDE_LIBRARY])
#
# A layer is an object library whose objects go into librill (OUTSIDE_LIBRARY:
# a static library of its own, for code that uses the library but is not part
# of it). SOURCES and CUDA_SOURCES (built only with CUDA) are relative to
# <folder>; the layer's public headers are <folder>/include/rill/*.h, included
# as "rill/<name>.h" by the layers above and, once installed, by users.
# EXTERNAL names packages as tools/check_layers.py knows them (CAF, Boost,
# CUDA, Gloo, OpenBLAS, OpenSSL, Protobuf, ZLIB, nlohmann_json, ...); a layer may use what it and the layers
# below it declare.

# What every layer compiles with: the tree's root and the build tree (internal
# headers are included by path, "runtime/core/buffer_pool.h"), generated headers
# (the generated protobuf sources include each other as "proto/..."), the
# build's options.
add_library(rill_build_settings INTERFACE)
target_include_directories(rill_build_settings INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                                                         ${PROJECT_BINARY_DIR}/include
                                                         ${PROJECT_BINARY_DIR}/include/rill)
if(RILL_WITH_CUDA)
  target_compile_definitions(rill_build_settings INTERFACE RILL_WITH_CUDA)
endif()

# The targets behind a package name of EXTERNAL.
function(rill_use_package target scope package)
  if(package STREQUAL "CAF")
    target_link_libraries(${target} ${scope} CAF::core CAF::io)
  elseif(package STREQUAL "Boost")
    target_link_libraries(${target} ${scope} Boost::fiber Boost::context)
  elseif(package STREQUAL "Protobuf")
    target_link_libraries(${target} ${scope} protobuf::libprotobuf)
  elseif(package STREQUAL "OpenBLAS")
    target_include_directories(${target} SYSTEM ${scope} ${OpenBLAS_INCLUDE_DIRS})
    target_link_libraries(${target} ${scope} ${OpenBLAS_LIBRARIES})
  elseif(package STREQUAL "OpenSSL")
    target_link_libraries(${target} ${scope} OpenSSL::Crypto)
  elseif(package STREQUAL "ZLIB")
    target_link_libraries(${target} ${scope} ZLIB::ZLIB)
  elseif(package STREQUAL "Gloo")
    target_link_libraries(${target} ${scope} Gloo::gloo)
  elseif(package STREQUAL "nlohmann_json")
    target_link_libraries(${target} ${scope} nlohmann_json::nlohmann_json)
  elseif(package STREQUAL "CUDA")
    if(RILL_WITH_CUDA)
      target_include_directories(${target} SYSTEM ${scope} ${NCCL_INCLUDE_DIR})
      target_link_libraries(${target} ${scope} CUDA::cudart CUDA::cublas ${NCCL_LIBRARY})
    endif()
  else()
    message(FATAL_ERROR "rill_layer: no targets known for package ${package}")
  endif()
endfunction()

# For the code around the library that uses its internals (tools, tests,
# benchmarks): librill, the tree's include roots, and the packages the
# internal headers name.
add_library(rill_internals INTERFACE)
target_link_libraries(rill_internals INTERFACE rill rill_build_settings CAF::core CAF::io Boost::fiber
                                               Boost::context)

set_property(GLOBAL PROPERTY RILL_LAYER_TABLE "")
set_property(GLOBAL PROPERTY RILL_PUBLIC_INCLUDE_DIRS "")
set_property(GLOBAL PROPERTY RILL_LIBRARY_LAYERS "")

function(rill_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "OUTSIDE_LIBRARY" "DIR" "DEPS;EXTERNAL;SOURCES;CUDA_SOURCES")
  set(dir ${PROJECT_SOURCE_DIR}/${arg_DIR})
  list(TRANSFORM arg_SOURCES PREPEND ${dir}/)
  if(RILL_WITH_CUDA)
    list(TRANSFORM arg_CUDA_SOURCES PREPEND ${dir}/)
    list(APPEND arg_SOURCES ${arg_CUDA_SOURCES})
  endif()
  if(arg_OUTSIDE_LIBRARY)
    # Uses librill as a whole: linking the layers' object libraries here would
    # put a second copy of their objects into this library.
    add_library(${name} STATIC ${arg_SOURCES})
    target_link_libraries(${name} PUBLIC rill_internals)
  elseif(arg_SOURCES)
    add_library(${name} OBJECT ${arg_SOURCES})
    target_link_libraries(rill PRIVATE ${name})  # its objects go into librill
    set_property(GLOBAL APPEND PROPERTY RILL_LIBRARY_LAYERS ${name})
  else()
    add_library(${name} INTERFACE)
  endif()
  get_target_property(type ${name} TYPE)
  set(scope PUBLIC)
  if(type STREQUAL "INTERFACE_LIBRARY")
    set(scope INTERFACE)
  endif()
  if(NOT arg_OUTSIDE_LIBRARY)
    target_link_libraries(${name} ${scope} rill_build_settings ${arg_DEPS})
  endif()
  foreach(package IN LISTS arg_EXTERNAL)
    rill_use_package(${name} ${scope} ${package})
  endforeach()
  if(EXISTS ${dir}/include/rill)
    target_include_directories(${name} ${scope} $<BUILD_INTERFACE:${dir}/include>)
    if(NOT arg_OUTSIDE_LIBRARY)
      set_property(GLOBAL APPEND PROPERTY RILL_PUBLIC_INCLUDE_DIRS ${dir}/include)
    endif()
  endif()
  string(REPLACE ";" "\", \"" deps "${arg_DEPS}")
  string(REPLACE ";" "\", \"" external "${arg_EXTERNAL}")
  if(deps)
    set(deps "\"${deps}\"")
  endif()
  if(external)
    set(external "\"${external}\"")
  endif()
  set_property(GLOBAL APPEND_STRING PROPERTY RILL_LAYER_TABLE
               "  {\"name\": \"${name}\", \"dir\": \"${arg_DIR}\", \"deps\": [${deps}], \"external\": [${external}]},\n")
endfunction()

# Writes <build>/layers.json and adds the check to the build (every build
# runs it; it reads headers only, in well under a second) and to CTest.
function(rill_check_layers)
  get_property(table GLOBAL PROPERTY RILL_LAYER_TABLE)
  string(REGEX REPLACE ",\n$" "\n" table "${table}")
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/layers.json CONTENT "[\n${table}]\n")
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(check ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/check_layers.py
      ${PROJECT_BINARY_DIR}/layers.json ${PROJECT_SOURCE_DIR})
  add_custom_target(check_layers ALL COMMAND ${check} COMMENT "Checking the layers' includes"
                    VERBATIM)
  add_dependencies(rill check_layers)
  if(RILL_BUILD_TESTS)
    add_test(NAME check_layers COMMAND ${check})
  endif()
endfunction()
