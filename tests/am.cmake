# Active messages (include/shoal/am): at 1-4 ranks, on default settings and with tiny buffers and a send cap of one.
shoal_add_mpi_test(am SOURCES am_test.cpp TIMEOUT 120
                   VARIANTS "tiny:SHOAL_AM_BUFFER=64,SHOAL_AM_MAX_SENDS=1")
