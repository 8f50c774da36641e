# shoal_add_mpi_test(<name> SOURCES <files...> [RANKS 1 2 3 4] [TIMEOUT seconds] [LIBS <targets...>]
#                    [VARIANTS <label>[@<ranks>]:<VAR=value>[,<VAR=value>...] ...] [MAIN <file>])
# Builds one test binary and registers it under mpiexec once per rank count (and once more per variant), e.g.
# core.np2 and core.mpi.np2; a variant label@N runs at N ranks only (faults@3 -> name.faults.np3). Every test has a
# timeout, so a hang fails instead of stalling the suite.
# Tests start through scripts/multihost/launch: on this host, or across emulated hosts when SHOAL_TEST_HOSTS is set
# (scripts/test.sh's multihost configurations run the .np2 and .np4 tests that way).
set(SHOAL_TEST_ENV
    "OMPI_ALLOW_RUN_AS_ROOT=1"
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    "OMPI_MCA_rmaps_base_oversubscribe=1"
    "OMPI_MCA_mpi_yield_when_idle=1"
    # Open MPI 4.1's vader CMA crashes after 64-bit MPI atomics (the SHOAL_FORCE_MPI variants); shoal stops with an
    # error saying so unless the job turns it off (docs/core.md, "Known traps").
    "OMPI_MCA_btl_vader_single_copy_mechanism=none"
    "ASAN_OPTIONS=detect_leaks=0"
    "SHOAL_HEAP_SIZE=64M")
set(SHOAL_TEST_LAUNCH ${PROJECT_SOURCE_DIR}/scripts/multihost/launch)

function(shoal_add_mpi_test name)
  cmake_parse_arguments(T "" "TIMEOUT;MAIN" "SOURCES;RANKS;LIBS;VARIANTS" ${ARGN})
  if(NOT T_RANKS)
    set(T_RANKS 1 2 3 4)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(target ${name}_test)
  if(T_MAIN)
    add_executable(${target} ${T_SOURCES} ${T_MAIN})
    target_link_libraries(${target} PRIVATE shoal::shoal GTest::gtest ${T_LIBS})
  else()
    add_executable(${target} ${T_SOURCES})
    target_link_libraries(${target} PRIVATE shoal_test_main ${T_LIBS})
  endif()
  set(variants "default:")
  list(APPEND variants ${T_VARIANTS})
  foreach(variant ${variants})
    # label[@N]:VAR=value,... — split at the first ':' only (values may hold colons, e.g. SHOAL_FAULTS=delay:1).
    string(FIND "${variant}" ":" colon)
    set(extra_env "")
    if(colon EQUAL -1)
      set(label "${variant}")
    else()
      string(SUBSTRING "${variant}" 0 ${colon} label)
      math(EXPR after "${colon} + 1")
      string(SUBSTRING "${variant}" ${after} -1 envs)
      string(REPLACE "," ";" extra_env "${envs}")
    endif()
    set(variant_ranks ${T_RANKS})
    if(label MATCHES "^([^@]+)@([0-9]+)$")  # label@N: this variant at N ranks only
      set(label ${CMAKE_MATCH_1})
      set(variant_ranks ${CMAKE_MATCH_2})
    endif()
    foreach(n ${variant_ranks})
      if(label STREQUAL "default")
        set(test_name ${name}.np${n})
      else()
        set(test_name ${name}.${label}.np${n})
      endif()
      add_test(NAME ${test_name}
               COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} ${MPIEXEC_PREFLAGS}
                       $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS})
      set(procs ${n})
      if(procs GREATER 2)
        set(procs 2)
      endif()
      set_tests_properties(${test_name} PROPERTIES TIMEOUT ${T_TIMEOUT} PROCESSORS ${procs}
                           ENVIRONMENT "${SHOAL_TEST_ENV};${extra_env}" LABELS "${name}")
    endforeach()
  endforeach()
endfunction()
