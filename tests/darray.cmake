# darray and array (containers/darray.hpp, containers/array.hpp), on both RMA paths, and at 3 ranks on owner-applied
# messages under the fault mode.
shoal_add_mpi_test(darray SOURCES darray_test.cpp TIMEOUT 60 VARIANTS "mpi:SHOAL_FORCE_MPI=1"
                   "faults@3:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on,SHOAL_FAULTS=delay:1")
