# Sourced by the scripts: settings for running MPI here (root in a container, 2 cores).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI 4.1's vader BTL crashes in MPI_Win_flush after 64-bit MPI atomics with CMA on (see docs/core.md).
export OMPI_MCA_btl_vader_single_copy_mechanism=none
jobs=$(nproc 2>/dev/null || echo 2)
