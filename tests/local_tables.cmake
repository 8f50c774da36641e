# The sequential tables of shoal/local/ (linear hashing, flat open addressing); one rank, no communication.
shoal_add_mpi_test(local_tables SOURCES local_tables_test.cpp RANKS 1 TIMEOUT 60)
