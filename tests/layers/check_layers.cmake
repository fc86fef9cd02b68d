# Checks that every #include "dir/..." in the product's sources points down the layer order
# (docs/architecture.md): a layer includes only itself and the layers below it, and above
# kernel/ only the kernel's public headers. Run: cmake -DSOURCE_DIR=<repo> -P check_layers.cmake
# Prints each violation as file: and fails if there is any.

cmake_minimum_required(VERSION 3.16)

# The layers each directory may include.
set(allowed_sim sim)
set(allowed_hw hw sim)
set(allowed_kernel kernel hw sim)
set(allowed_user user kernel sim)
set(allowed_report report sim)
set(allowed_workloads workloads user kernel report hw sim)
set(allowed_scenario scenario workloads report kernel hw sim)
set(allowed_real real sim)
set(allowed_trace trace kernel report sim)
set(allowed_cli cli scenario workloads report trace real kernel hw sim)
set(allowed_bench bench scenario report sim)
set(allowed_fuzz fuzz scenario report hw sim)
# What the layers above kernel/ may see of it (kernel/kernel.h says why).
set(kernel_public kernel/kernel.h kernel/uapi.h kernel/config.h kernel/stats.h kernel/trace.h kernel/settings.h
    kernel/slice_ext_designs.h)

set(violations 0)
foreach(layer sim hw kernel user report workloads scenario real trace cli bench fuzz)
  file(GLOB_RECURSE files "${SOURCE_DIR}/${layer}/*.h" "${SOURCE_DIR}/${layer}/*.cc")
  foreach(f ${files})
    file(STRINGS "${f}" lines REGEX "^#include \"[a-z_]+/")
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    foreach(line ${lines})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
      string(REGEX REPLACE "/.*" "" dir "${inc}")
      if(NOT dir IN_LIST allowed_${layer})
        message("${rel}: ${layer}/ includes ${inc} (${dir}/ is not below ${layer}/)")
        math(EXPR violations "${violations} + 1")
      elseif(dir STREQUAL "kernel" AND NOT layer STREQUAL "kernel" AND NOT inc IN_LIST kernel_public)
        message("${rel}: ${layer}/ includes ${inc}, a kernel-private header (use kernel/kernel.h, kernel/stats.h)")
        math(EXPR violations "${violations} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) against the layer order")
endif()
