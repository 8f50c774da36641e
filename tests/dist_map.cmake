# dist_map and dist_multimap (include/shoal/containers/dist_map.hpp, dist_multimap.hpp) at 1-4 ranks, on default
# active-message settings and with tiny buffers and a send cap of one.
shoal_add_mpi_test(dist_map SOURCES dist_map_test.cpp TIMEOUT 120
                   VARIANTS "tiny:SHOAL_AM_BUFFER=64,SHOAL_AM_MAX_SENDS=1"
                   "faults@3:SHOAL_FAULTS=delay:1")
# dist_map's handlers given malformed messages (through owner_table_test_access): refused as corrupt streams.
shoal_add_mpi_test(dist_map_malformed SOURCES dist_map_malformed_test.cpp TIMEOUT 60)
