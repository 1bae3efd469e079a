# Gloo (Debian's libgloo-dev): collectives over TCP for data parallelism across
# processes on CPUs (actors/distributed/process_group.cc). Its own CMake config
# names a target without a namespace and only a RelWithDebInfo location, so
# Rill finds the header and the library itself. Usage: find_package(Gloo REQUIRED)
# -> Gloo::gloo.
find_path(Gloo_INCLUDE_DIR gloo/allreduce.h)
find_library(Gloo_LIBRARY gloo)
if(Gloo_INCLUDE_DIR AND Gloo_LIBRARY AND NOT TARGET Gloo::gloo)
  add_library(Gloo::gloo UNKNOWN IMPORTED)
  set_target_properties(Gloo::gloo PROPERTIES IMPORTED_LOCATION "${Gloo_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${Gloo_INCLUDE_DIR}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Gloo REQUIRED_VARS Gloo_INCLUDE_DIR Gloo_LIBRARY)
