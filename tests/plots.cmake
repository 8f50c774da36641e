# scripts/plot.py, results_page.py and sweep.sh (issue 19), driven by tests/plots_test.py:
#   plots.render     every workload of a small recorded sweep drawn (SVG + PNG) and the results page written
#   plots.malformed  broken JSON files and records: exit 2 with one line naming the file and the fault
#   sweep.small      scripts/sweep.sh at 1 and 2 ranks with the smallest size, on this build's shoal-bench
# Debian's python3-matplotlib belongs to /usr/bin/python3, so that interpreter comes first. A test that needs
# matplotlib and cannot import it is skipped (exit 77); without shoal-bench (SHOAL_BUILD_BENCH=OFF) sweep.small is
# not registered.
find_program(SHOAL_PYTHON NAMES python3 HINTS /usr/bin)
if(NOT SHOAL_PYTHON)
  message(STATUS "shoal: no python3; the plots.* and sweep.small tests are not registered")
  return()
endif()

set(plots_dir ${CMAKE_CURRENT_BINARY_DIR}/plots)
set(plots_fixture ${CMAKE_CURRENT_SOURCE_DIR}/data/plots/sweep_small.json)
set(plots_driver ${SHOAL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/plots_test.py)
add_test(NAME plots.render COMMAND ${plots_driver} render ${plots_fixture} ${plots_dir}/render)
add_test(NAME plots.malformed COMMAND ${plots_driver} malformed ${plots_fixture} ${plots_dir}/malformed)
set(plots_tests plots.render plots.malformed)
if(SHOAL_BUILD_BENCH)
  add_test(NAME sweep.small
           COMMAND ${plots_driver} sweep ${plots_dir}/sweep $<TARGET_FILE:shoal-bench> ${MPIEXEC_EXECUTABLE})
  set_tests_properties(sweep.small PROPERTIES PROCESSORS 2)
  list(APPEND plots_tests sweep.small)
else()
  message(STATUS "shoal: SHOAL_BUILD_BENCH is OFF; the sweep.small test is not registered")
endif()
set_tests_properties(${plots_tests} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77 LABELS "plots"
                     ENVIRONMENT "${SHOAL_TEST_ENV};MPLCONFIGDIR=${plots_dir}/mplconfig")
