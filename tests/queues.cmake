# fast_queue and circular_queue (containers/fast_queue.hpp, containers/circular_queue.hpp), on the path chosen at
# start (shared memory here), on the forced MPI RMA path, on forced owner-applied messages, and on those at 3 ranks
# under the fault mode.
shoal_add_mpi_test(queues SOURCES queues_test.cpp TIMEOUT 120 VARIANTS "mpi:SHOAL_FORCE_MPI=1"
                   "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
