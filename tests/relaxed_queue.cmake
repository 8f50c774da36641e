# relaxed_queue (lock-based in both lock modes, lock-free, local-first placement) and its strict FIFO baseline,
# on the path chosen at start (shared memory here), on the forced MPI RMA path, on forced owner-applied messages, and
# on those at 3 ranks under the fault mode.
shoal_add_mpi_test(relaxed_queue SOURCES relaxed_queue_test.cpp TIMEOUT 120 VARIANTS "mpi:SHOAL_FORCE_MPI=1"
                   "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
# The strict baseline lives with shoal-bench (bench/linked_fifo_queue.hpp), not in the library.
target_include_directories(relaxed_queue_test PRIVATE ${PROJECT_SOURCE_DIR}/bench)
