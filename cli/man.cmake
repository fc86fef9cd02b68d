# Writes schedlab's man page (OUT) with help2man from `SCHEDLAB --help`, adding a COMMANDS
# section with the --help of each command. Run by cli/CMakeLists.txt:
#   cmake -DSCHEDLAB=path/to/schedlab -DHELP2MAN=help2man -DOUT=schedlab.1 -P man.cmake
set(include "[COMMANDS]\n")
foreach(cmd run compare plot list bench real)
  execute_process(COMMAND "${SCHEDLAB}" ${cmd} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "schedlab ${cmd} --help failed (${rc})")
  endif()
  # roff: a backslash is written \e; a line may not start with a control character.
  string(REPLACE "\\" "\\e" help "${help}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
  string(APPEND include ".SS \"schedlab ${cmd}\"\n.nf\n${help}.fi\n")
endforeach()
get_filename_component(dir "${OUT}" DIRECTORY)
file(WRITE "${dir}/schedlab-man-commands.h2m" "${include}")
execute_process(
  COMMAND "${HELP2MAN}" --no-info --section=1
          "--name=deterministic simulator of the Linux SMP scheduler"
          "--include=${dir}/schedlab-man-commands.h2m" "--output=${OUT}" "${SCHEDLAB}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed (${rc})")
endif()
