# darray and array (containers/darray.hpp, containers/array.hpp), on both RMA paths.
shoal_add_mpi_test(darray SOURCES darray_test.cpp TIMEOUT 60 VARIANTS "mpi:SHOAL_FORCE_MPI=1")
