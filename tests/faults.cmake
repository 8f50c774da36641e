# Faults (docs/testing.md, "Faults"). The fault mode (SHOAL_FAULTS: delayed, reordered deliveries on both message
# channels) runs as the faults@3 variants in the containers' own .cmake files: am, dist_map, ordered_map on active
# messages; core, darray, hash_map, hash_map_buffer, bloom_filter, queues, relaxed_queue and the histories on
# owner-applied messages (SHOAL_FORCE_MESSAGES=1). Here: a rank that dies in the middle of a collective phase
# (std::abort, or _exit with status 3) must make the job stop with an error within the time limit, never hang.
add_executable(rank_death_test rank_death_main.cpp)
target_link_libraries(rank_death_test PRIVATE shoal::shoal)
foreach(how abort exit)
  add_test(NAME rank_death.${how}.np3
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 60 ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} 3
                   ${MPIEXEC_PREFLAGS} $<TARGET_FILE:rank_death_test> ${MPIEXEC_POSTFLAGS} ${how})
  set_tests_properties(rank_death.${how}.np3 PROPERTIES TIMEOUT 90 PROCESSORS 2 LABELS faults
                       ENVIRONMENT "${SHOAL_TEST_ENV}" PASS_REGULAR_EXPRESSION "stopped with status")
endforeach()
# The fault mode itself (include/shoal/core/detail/faults.hpp): parsing and the scheduler at one rank; at 3 ranks on
# the owner-applied message path, that requests and replies are really held back and reordered, per-origin order kept.
shoal_add_mpi_test(fault_mode SOURCES fault_mode_test.cpp RANKS 1 TIMEOUT 60
                   VARIANTS "messages@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
