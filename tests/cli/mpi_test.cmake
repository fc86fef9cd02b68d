# `mpirun -np 2 schedlab compare ... --mpi` writes the table, JSON and CSV of the same
# comparison run in one process, byte for byte; a bad option under mpirun is one line on
# stderr (rank 0's) and exit code 2 from every rank, with no output file left behind.
#   cmake -DSCHEDLAB=... -DMPIEXEC=... -DMPIEXEC_FLAGS="..." -DDIR=... -P mpi_test.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
separate_arguments(flags UNIX_COMMAND "${MPIEXEC_FLAGS}")
set(args compare spinlock --machine small4 --duration 20ms --vary hz=250,1000 --seeds 3 --jobs 1
         --set threads=8 --set hogs=2)

execute_process(COMMAND "${SCHEDLAB}" ${args} --json "${DIR}/local.json" --csv "${DIR}/local.csv"
                OUTPUT_FILE "${DIR}/local.txt" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the local compare failed (${rc})")
endif()
execute_process(COMMAND "${MPIEXEC}" ${flags} -np 2 "${SCHEDLAB}" ${args} --mpi
                        --json "${DIR}/mpi.json" --csv "${DIR}/mpi.csv"
                OUTPUT_FILE "${DIR}/mpi.txt" ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun -np 2 schedlab compare --mpi failed (${rc}): ${err}")
endif()
foreach(ext json csv txt)
  file(SHA256 "${DIR}/local.${ext}" want)
  file(SHA256 "${DIR}/mpi.${ext}" got)
  if(NOT want STREQUAL got)
    file(READ "${DIR}/local.${ext}" a)
    file(READ "${DIR}/mpi.${ext}" b)
    message(FATAL_ERROR "the ${ext} of 2 ranks differs from the local run's:\n--- local\n${a}\n--- mpi\n${b}")
  endif()
endforeach()

# Bad input: every rank meets it, rank 0 alone prints it, and all exit 2.
execute_process(COMMAND "${MPIEXEC}" ${flags} -np 2 "${SCHEDLAB}" ${args} --mpi --row "x:no_such=1"
                        --json "${DIR}/bad.json"
                OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
string(REGEX MATCHALL "schedlab: error:[^\n]*" lines "${err}")
list(LENGTH lines n)
if(NOT rc EQUAL 2 OR NOT n EQUAL 1 OR NOT err MATCHES "no_such" OR EXISTS "${DIR}/bad.json")
  message(FATAL_ERROR "bad --row under mpirun: exit ${rc}, ${n} error lines, stderr:\n${err}")
endif()
# Only rank 0 opens the outputs: a destination it cannot write stops every rank.
execute_process(COMMAND "${MPIEXEC}" ${flags} -np 2 "${SCHEDLAB}" ${args} --mpi
                        --json "${DIR}/no/such/dir.json"
                OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
string(REGEX MATCHALL "schedlab: error:[^\n]*" lines "${err}")
list(LENGTH lines n)
if(NOT rc EQUAL 2 OR NOT n EQUAL 1 OR NOT err MATCHES "cannot write")
  message(FATAL_ERROR "unwritable --json under mpirun: exit ${rc}, ${n} error lines, stderr:\n${err}")
endif()
file(REMOVE_RECURSE "${DIR}")
