# The sequential parts of the dist_map applications (apps/bsgs, apps/matrix_scatter, apps/kv_trace).
shoal_add_mpi_test(kv_apps_support SOURCES kv_apps_support_test.cpp RANKS 1 TIMEOUT 60)
target_include_directories(kv_apps_support_test PRIVATE ${PROJECT_SOURCE_DIR}/apps)
# The applications themselves at 1-4 ranks (parallel BSGS, the matrix scatter, K-V trace replay on the service).
shoal_add_mpi_test(kv_apps SOURCES kv_apps_test.cpp TIMEOUT 120)
target_include_directories(kv_apps_test PRIVATE ${PROJECT_SOURCE_DIR}/apps)
