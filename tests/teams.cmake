# Containers on teams (split, reversed, one rank, from the user's communicator) and container lifetimes across
# environments; the main initialises MPI itself so each test starts and ends shoal.
shoal_add_mpi_test(teams SOURCES teams_test.cpp MAIN core_adopt_main.cpp TIMEOUT 120)
