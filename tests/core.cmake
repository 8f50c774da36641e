# The core runtime, on the path chosen at start (shared memory here), on the forced MPI RMA path, on forced
# owner-applied messages, and on those at 3 ranks under the fault mode (docs/testing.md, "Faults").
shoal_add_mpi_test(core SOURCES core_test.cpp VARIANTS "mpi:SHOAL_FORCE_MPI=1"
                   "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on,SHOAL_FAULTS=delay:1")
shoal_add_mpi_test(core_adopt SOURCES core_adopt_test.cpp MAIN core_adopt_main.cpp)
shoal_add_mpi_test(serialize SOURCES serialize_test.cpp RANKS 1 2)
