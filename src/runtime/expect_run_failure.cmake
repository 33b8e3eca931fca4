# Runs an MPI job that must fail cleanly:
#   cmake -DMPIEXEC=mpiexec "-DFLAGS=..." -DNP=2 -DPROGRAM=tessera "-DARGS=zellige run ..."
#         "-DEXPECT_REGEX=..." -DEXPECT_COUNT=2 -DLIMIT_S=60 -P expect_run_failure.cmake
# Passes when the job ends within LIMIT_S seconds with a non-zero exit code and
# EXPECT_REGEX occurs at least EXPECT_COUNT times in its output (one line per rank).
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${MPIEXEC} ${flags} -np ${NP} ${PROGRAM} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT ${LIMIT_S})
message("${out}")
message("${err}")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "FAIL: the job did not end within ${LIMIT_S} s (${rc})")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "FAIL: the job exited 0 but was expected to fail")
endif()
string(REGEX MATCHALL "${EXPECT_REGEX}" hits "${out}${err}")
list(LENGTH hits n)
if(n LESS EXPECT_COUNT)
  message(FATAL_ERROR "FAIL: '${EXPECT_REGEX}' found ${n} times, expected >= ${EXPECT_COUNT}")
endif()
message("PASS: the job failed as expected (exit ${rc})")
