# Run and compare JSON documents validate against docs/schema/*.schema.json with the
# python3-jsonschema validator (scripts/bootstrap installs it), and a document with a key the
# schema does not document fails.
#   cmake -DSCHEDLAB=... -DSRC=... -DDIR=... -P json_schema_test.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
function(run_ok)
  execute_process(COMMAND ${ARGN} OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}: exit ${rc}: ${err}")
  endif()
endfunction()
# Between them: groups with cpu.max metrics, latencies, the original program's output lines,
# per-task extras, and a comparison with changes.
run_ok("${SCHEDLAB}" run hog -m small4 -d 20ms -s threads=2 -s cgroup=/a -s "cpu.max=20000 100000"
       --also hog:threads=1,cgroup=/b,cpu.idle=1 --json "${DIR}/groups.json")
run_ok("${SCHEDLAB}" run wakeup-latency -m small4 -d 20ms --json "${DIR}/latency.json")
run_ok("${SCHEDLAB}" run extend-sched2 -m small4 -d 50ms -s ext=rfc --json "${DIR}/es2.json")
run_ok("${SCHEDLAB}" compare hog -m small4 -d 10ms --vary threads=1,2 --seeds 2 --json "${DIR}/compare.json")
set(py "${SRC}/tests/report/validate_json.py")
run_ok(python3 "${py}" "${SRC}/docs/schema/results.schema.json" "${DIR}/groups.json" "${DIR}/latency.json"
       "${DIR}/es2.json")
run_ok(python3 "${py}" "${SRC}/docs/schema/comparison.schema.json" "${DIR}/compare.json")
# The schemas can fail: an undocumented top-level key, and a comparison read as results.
file(READ "${DIR}/latency.json" text)
string(REGEX REPLACE "^{" "{\n  \"undocumented\": 1," text "${text}")
file(WRITE "${DIR}/bad.json" "${text}")
run_ok(python3 "${py}" --expect-invalid "${SRC}/docs/schema/results.schema.json" "${DIR}/bad.json"
       "${DIR}/compare.json")
