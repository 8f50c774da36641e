# Checked histories (issue 20): the linearizability checker on hand-made histories (tests/support/), then recorded
# concurrent histories of each container, checked on rank 0 against a sequential model (docs/testing.md); the
# faults@3 variants under the fault mode, on owner-applied messages (the maps' dist_map on delayed active messages).
shoal_add_mpi_test(linearizability SOURCES linearizability_test.cpp RANKS 1 TIMEOUT 60)
shoal_add_mpi_test(history_core SOURCES history_core_test.cpp RANKS 2 3 4 TIMEOUT 60
                   VARIANTS "mpi:SHOAL_FORCE_MPI=1" "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
shoal_add_mpi_test(history_maps SOURCES history_maps_test.cpp RANKS 2 3 4 TIMEOUT 90
                   VARIANTS "mpi:SHOAL_FORCE_MPI=1" "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
shoal_add_mpi_test(history_queues SOURCES history_queues_test.cpp RANKS 2 3 4 TIMEOUT 90
                   VARIANTS "mpi:SHOAL_FORCE_MPI=1" "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
target_include_directories(history_queues_test PRIVATE ${PROJECT_SOURCE_DIR}/bench)  # bench/linked_fifo_queue.hpp
shoal_add_mpi_test(history_ordered_map SOURCES history_ordered_map_test.cpp RANKS 2 3 4 TIMEOUT 90
                   VARIANTS "faults@3:SHOAL_FAULTS=delay:1")
shoal_add_mpi_test(history_relaxed_queue SOURCES history_relaxed_queue_test.cpp RANKS 2 3 4 TIMEOUT 90
                   VARIANTS "mpi:SHOAL_FORCE_MPI=1" "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
