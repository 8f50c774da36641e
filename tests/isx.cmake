# The ISx application (apps/isx): small sorts verified against MPI_Alltoallv, on both RMA paths.
shoal_add_mpi_test(isx SOURCES isx_test.cpp TIMEOUT 120 VARIANTS "mpi:SHOAL_FORCE_MPI=1")
target_link_libraries(isx_test PRIVATE shoal_isx)
