# shoal_add_mpi_test(<name> SOURCES <files...> [RANKS 1 2 3 4] [TIMEOUT seconds] [LIBS <targets...>]
#                    [VARIANTS <label>:<VAR=value>[,<VAR=value>...] ...] [MAIN <file>])
# Builds one test binary and registers it under mpiexec once per rank count (and once more per variant), e.g.
# core.np2 and core.mpi.np2. Every test has a timeout, so a hang fails instead of stalling the suite.
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
    string(REPLACE ":" ";" parts "${variant}")
    list(GET parts 0 label)
    list(LENGTH parts nparts)
    set(extra_env "")
    if(nparts GREATER 1)
      list(GET parts 1 envs)
      string(REPLACE "," ";" extra_env "${envs}")
    endif()
    foreach(n ${T_RANKS})
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
