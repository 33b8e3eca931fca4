# Runs an MPI job that is expected to fail and checks that it failed the right way:
#   cmake -DMPIEXEC=mpiexec "-DFLAGS=--oversubscribe ..." -DNP=3 -DPROGRAM=prog "-DARGS=--x y"
#         "-DEXPECT_REGEX=..." [-DEXPECT_COUNT=1] -DLIMIT_S=40 -P expect_mpi_failure.cmake
# Passes when the job ends within LIMIT_S seconds with a non-zero exit code and its output
# matches EXPECT_REGEX at least EXPECT_COUNT times (default 1); fails on success, on a hang
# (timeout) or on unexpected output. With -DONCE_PREFIX=P, lines starting with P must occur
# exactly once in the whole output (a user error printed by one rank, not by every rank).
# Shared by the comm and runtime MPI failure tests.
if(NOT DEFINED EXPECT_COUNT)
  set(EXPECT_COUNT 1)
endif()
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
if(DEFINED ONCE_PREFIX)
  string(REGEX MATCHALL "(^|\n)${ONCE_PREFIX}" once "${out}${err}")
  list(LENGTH once m)
  if(NOT m EQUAL 1)
    message(FATAL_ERROR "FAIL: '${ONCE_PREFIX}' lines: ${m}, expected exactly 1\n${out}${err}")
  endif()
endif()
message("PASS: the job failed as expected (exit ${rc})")
