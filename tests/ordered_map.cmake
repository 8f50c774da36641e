# ordered_map: the protocol in one process (simulated ranks, random interleavings) and the distributed container.
shoal_add_mpi_test(ordered_map_sim SOURCES ordered_map_sim_test.cpp RANKS 1 TIMEOUT 420)
shoal_add_mpi_test(ordered_map SOURCES ordered_map_test.cpp TIMEOUT 120
                   VARIANTS "tiny:SHOAL_AM_BUFFER=64,SHOAL_AM_MAX_SENDS=1" "faults@3:SHOAL_FAULTS=delay:1")
