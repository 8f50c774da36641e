# Active messages (include/shoal/am): at 1-4 ranks, on default settings (buffers between ranks of this host through
# shared-memory rings), with 64-byte buffers, a send cap of one and the smallest rings (which wrap, fill and wait at
# every few buffers; messages larger than a buffer go by MPI, announced in the ring), with every buffer by MPI
# (SHOAL_AM_SHM_RING=0: the MPI stream, which the multihost runs use between hosts), with 8 KiB rings (small buffers in
# the rings, full ones by MPI, announced: both in each pair's stream), with every one-sided operation by owner-applied
# messages (handlers that wait for remote atomics), and at 3 ranks under the test-only fault mode (delayed, reordered
# deliveries), one-sided operations by messages there too (both channels delayed at once).
shoal_add_mpi_test(am SOURCES am_test.cpp TIMEOUT 120
                   VARIANTS "tiny:SHOAL_AM_BUFFER=64,SHOAL_AM_MAX_SENDS=1,SHOAL_AM_SHM_RING=256"
                            "mpi:SHOAL_AM_SHM_RING=0"
                            "ring8k@3:SHOAL_AM_SHM_RING=8K"
                            "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                            "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
set_target_properties(am_test PROPERTIES ENABLE_EXPORTS ON)  # handler names in error messages (dladdr)
# Start, finalize and restart shoal inside one MPI program (the main initialises MPI itself).
shoal_add_mpi_test(am_lifecycle SOURCES am_lifecycle_test.cpp MAIN core_adopt_main.cpp TIMEOUT 60)

# Handlers and arguments that must be rejected at compile time, with a readable message: each case is a target left
# out of the normal build, and its test passes when building it fails with the expected diagnostic.
foreach(reject capturing_lambda unsendable_argument span_argument)
  add_library(am_rejects_${reject} OBJECT EXCLUDE_FROM_ALL am_rejects/${reject}.cpp)
  target_link_libraries(am_rejects_${reject} PRIVATE shoal::shoal)
  add_test(NAME am.rejects_${reject}
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target am_rejects_${reject})
  # Both tests drive the build system of this build tree: one at a time.
  set_tests_properties(am.rejects_${reject} PROPERTIES TIMEOUT 120 LABELS am RESOURCE_LOCK shoal_build_tree)
endforeach()
set_tests_properties(am.rejects_capturing_lambda PROPERTIES PASS_REGULAR_EXPRESSION "lambda WITHOUT captures")
set_tests_properties(am.rejects_unsendable_argument PROPERTIES
                     PASS_REGULAR_EXPRESSION "every_type_is_serializable.*unique_ptr")
set_tests_properties(am.rejects_span_argument PROPERTIES PASS_REGULAR_EXPRESSION "every_type_is_serializable.*span")
# The engine given buffers no sender wrote (through engine_test_access): refused as corrupt streams.
shoal_add_mpi_test(am_malformed SOURCES am_malformed_test.cpp TIMEOUT 60)
