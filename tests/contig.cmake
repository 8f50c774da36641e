# The contig application end to end: the shipped dataset against its expected unitigs, a generated genome without
# repeats (one contig equal to the genome), and a k-mer file in the form real-read pipelines write (F/X extensions,
# non-canonical lines, extra columns). Needs the app targets (SHOAL_BUILD_BENCH).
if(SHOAL_BUILD_BENCH)
  set(_contig_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_mpi_yield_when_idle=1;ASAN_OPTIONS=detect_leaks=0;SHOAL_HEAP_SIZE=64M")
  add_test(NAME contig.generate_plain
           COMMAND $<TARGET_FILE:shoal-contig-gen> --length 5000 --k 21 --repeats 0 --seed 11
                   --out ${CMAKE_CURRENT_BINARY_DIR}/contig_plain)
  set_tests_properties(contig.generate_plain PROPERTIES FIXTURES_SETUP contig_plain LABELS contig TIMEOUT 60)
  foreach(n 1 2 3 4)
    set(procs ${n})
    if(procs GREATER 2)
      set(procs 2)
    endif()
    add_test(NAME contig.small.np${n}
             COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} $<TARGET_FILE:shoal-contig>
                     ${PROJECT_SOURCE_DIR}/data/contig_small.ufx --out ${CMAKE_CURRENT_BINARY_DIR}/contig_small.np${n}.fa
                     --expected ${PROJECT_SOURCE_DIR}/data/contig_small.expected.fa --message-bytes 1024)
    add_test(NAME contig.plain_genome.np${n}
             COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} $<TARGET_FILE:shoal-contig>
                     ${CMAKE_CURRENT_BINARY_DIR}/contig_plain.ufx --expected ${CMAKE_CURRENT_BINARY_DIR}/contig_plain.genome.fa)
    add_test(NAME contig.reads_format.np${n}
             COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} $<TARGET_FILE:shoal-contig>
                     ${PROJECT_SOURCE_DIR}/tests/data/contig_reads.ufx
                     --expected ${PROJECT_SOURCE_DIR}/tests/data/contig_reads.expected.fa)
    set_tests_properties(contig.small.np${n} contig.plain_genome.np${n} contig.reads_format.np${n} PROPERTIES
                         TIMEOUT 60 PROCESSORS ${procs} ENVIRONMENT "${_contig_env}" LABELS contig)
    set_tests_properties(contig.plain_genome.np${n} PROPERTIES FIXTURES_REQUIRED contig_plain)
  endforeach()
endif()
