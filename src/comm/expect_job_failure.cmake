# Runs an MPI job that is expected to fail and checks that it failed the right way:
#   cmake -DMPIEXEC=mpirun "-DFLAGS=--oversubscribe ..." -DNP=3 -DPROGRAM=prog -DARGS=--x
#         "-DEXPECT_REGEX=..." -DLIMIT_S=40 -P expect_job_failure.cmake
# Passes when the job ends within LIMIT_S seconds with a non-zero exit code and its output
# matches EXPECT_REGEX; fails on success, on a hang (timeout) or on unexpected output.
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(COMMAND ${MPIEXEC} ${flags} -np ${NP} ${PROGRAM} ${ARGS}
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
if(NOT "${out}${err}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "FAIL: output does not match '${EXPECT_REGEX}'")
endif()
message("PASS: the job failed as expected (exit ${rc})")
