# Checked histories (issue 20): the linearizability checker on hand-made histories (tests/support/), then recorded
# concurrent histories of each container, checked on rank 0 against a sequential model (docs/testing.md).
shoal_add_mpi_test(linearizability SOURCES linearizability_test.cpp RANKS 1 TIMEOUT 60)
