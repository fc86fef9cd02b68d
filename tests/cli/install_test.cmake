# `cmake --install BUILD_DIR --prefix PREFIX` gives PREFIX/bin/schedlab, its man page (when
# help2man was found: MAN=1), and a pkg-config file pointing at PREFIX with which a C program
# compiles against the installed real/ headers.
#   cmake -DBUILD_DIR=... -DPREFIX=... -DMAN=0|1 -P install_test.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                OUTPUT_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()

execute_process(COMMAND "${PREFIX}/bin/schedlab" --version OUTPUT_VARIABLE version RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT version MATCHES "^schedlab ")
  message(FATAL_ERROR "installed schedlab --version: ${rc} '${version}'")
endif()

if(MAN)
  set(page "${PREFIX}/share/man/man1/schedlab.1")
  if(NOT EXISTS "${page}")
    message(FATAL_ERROR "no man page at ${page}")
  endif()
  file(READ "${page}" text)
  foreach(want ".TH SCHEDLAB \"1\"" "schedlab compare" "(default: vm50)")
    string(FIND "${text}" "${want}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the man page lacks '${want}'")
    endif()
  endforeach()
endif()

find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/share/pkgconfig")
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs schedlab-slice-ext
                OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT flags STREQUAL "-I${PREFIX}/include/schedlab")
  message(FATAL_ERROR "pkg-config --cflags --libs schedlab-slice-ext: ${rc} '${flags}', "
                      "expected '-I${PREFIX}/include/schedlab'")
endif()

find_program(CC NAMES cc gcc REQUIRED)
set(src "${PREFIX}/app.c")
file(WRITE "${src}" "#include \"real/slice_ext_c.h\"\n"
                    "int main(void) { return SCHEDLAB_PR_RSEQ_SLICE_EXTENSION == 79 ? 0 : 1; }\n")
separate_arguments(cflags UNIX_COMMAND "${flags}")
execute_process(COMMAND "${CC}" -std=c11 -Wall -Werror ${cflags} "${src}" -o "${PREFIX}/app"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling against the installed headers failed: ${err}")
endif()
execute_process(COMMAND "${PREFIX}/app" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the program built against the installed headers returned ${rc}")
endif()
file(REMOVE_RECURSE "${PREFIX}")
