# hash_map, hash_map_buffer, bloom_filter (BCL §5.2-5.4) and the contig application, on the path chosen at start
# (shared memory here) and on the forced MPI RMA path; the containers also at 3 ranks on owner-applied messages under
# the fault mode.
shoal_add_mpi_test(hash_map SOURCES hash_map_test.cpp TIMEOUT 120 VARIANTS "mpi:SHOAL_FORCE_MPI=1"
                   "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on,SHOAL_FAULTS=delay:1")
shoal_add_mpi_test(hash_map_buffer SOURCES hash_map_buffer_test.cpp TIMEOUT 120 VARIANTS "mpi:SHOAL_FORCE_MPI=1"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_FAULTS=delay:1")
shoal_add_mpi_test(bloom_filter SOURCES bloom_filter_test.cpp TIMEOUT 120 VARIANTS "mpi:SHOAL_FORCE_MPI=1"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on,SHOAL_FAULTS=delay:1")
