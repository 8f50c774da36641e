# The contig application end to end: the shipped dataset against its expected unitigs, a generated genome without
# repeats (one contig equal to the genome), a k-mer file in the form real-read pipelines write (F/X extensions,
# non-canonical lines, extra columns), hairpins (the walk never holds a canonical k-mer twice), and reads mode:
# generated reads with substitution errors from both strands in FASTQ / FASTA, plain / gzip, several files, whose
# contigs must lie on the genome, cover >= 95% of it, and be the same files at every rank count and format.

# Below the command line: non-ACGT bases split reads and no k-mer spans them, from reading through the distributed
# count, and the counter's exchange delivers every item once when one owner is crowded (tests/contig_test.cpp), at
# 1-4 ranks, on each RMA path (shared memory, forced MPI RMA, owner-applied messages).
find_package(ZLIB REQUIRED)  # reads.hpp reads gzip (Debian: zlib1g-dev)
shoal_add_mpi_test(contig_count SOURCES contig_test.cpp TIMEOUT 60 LIBS ZLIB::ZLIB
                   VARIANTS "mpi:SHOAL_FORCE_MPI=1" "messages:SHOAL_FORCE_MESSAGES=1,SHOAL_PROGRESS_THREAD=on")
target_include_directories(contig_count_test PRIVATE ${PROJECT_SOURCE_DIR}/apps/contig)
target_compile_definitions(contig_count_test PRIVATE CONTIG_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
target_compile_options(contig_count_test PRIVATE -Wall -Wextra)

# The rest needs the app targets (SHOAL_BUILD_BENCH).
if(SHOAL_BUILD_BENCH)
  set(_contig_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_mpi_yield_when_idle=1;ASAN_OPTIONS=detect_leaks=0;SHOAL_HEAP_SIZE=64M")
  add_test(NAME contig.generate_plain
           COMMAND $<TARGET_FILE:shoal-contig-gen> --length 5000 --k 21 --repeats 0 --seed 11
                   --out ${CMAKE_CURRENT_BINARY_DIR}/contig_plain)
  set_tests_properties(contig.generate_plain PROPERTIES FIXTURES_SETUP contig_plain LABELS contig TIMEOUT 60)
  set(_contig_reads_fastq ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fastq.reads.1.fq
                          ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fastq.reads.2.fq)
  set(_contig_reads_fasta_gz ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fasta_gz.reads.1.fa.gz
                             ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fasta_gz.reads.2.fa.gz
                             ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fasta_gz.reads.3.fa.gz)
  set(_contig_reads_fastq_gz ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fastq_gz.reads.fq.gz)
  set(_contig_reads_fasta ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fasta.reads.fa)
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

    # Hairpins: A + rc(A) is one contig of |A| + (k-1)/2 bases (the expected file comes from that formula);
    # B + A + rc(A) + C folds inside. --check: no canonical k-mer twice in the contigs.
    foreach(shape hairpin hairpin_inside)
      add_test(NAME contig.${shape}.np${n}
               COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} $<TARGET_FILE:shoal-contig>
                       ${CMAKE_CURRENT_BINARY_DIR}/contig_${shape}.ufx --check
                       --expected ${CMAKE_CURRENT_BINARY_DIR}/contig_${shape}.expected.fa)
      set_tests_properties(contig.${shape}.np${n} PROPERTIES TIMEOUT 60 PROCESSORS ${procs}
                           ENVIRONMENT "${_contig_env}" LABELS contig FIXTURES_REQUIRED contig_${shape})
    endforeach()

    # Reads mode, one test per format; each writes its contigs for the comparisons below.
    foreach(format fastq fasta_gz fastq_gz fasta)
      add_test(NAME contig.reads_${format}.np${n}
               COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} $<TARGET_FILE:shoal-contig>
                       --reads ${_contig_reads_${format}} --k 31 --min-count 4 --check
                       --out ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_${format}.np${n}.fa
                       --genome ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fastq.genome.fa --min-genome-coverage 0.95)
      set_tests_properties(contig.reads_${format}.np${n} PROPERTIES TIMEOUT 60 PROCESSORS ${procs}
                           ENVIRONMENT "${_contig_env}" LABELS contig FIXTURES_REQUIRED contig_reads
                           FIXTURES_SETUP contig_reads_${format}.np${n})
      if(NOT (n EQUAL 1 AND format STREQUAL "fastq"))
        add_test(NAME contig.reads_same.${format}.np${n}
                 COMMAND ${CMAKE_COMMAND} -E compare_files ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fastq.np1.fa
                         ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_${format}.np${n}.fa)
        set_tests_properties(contig.reads_same.${format}.np${n} PROPERTIES TIMEOUT 30 LABELS contig
                             FIXTURES_REQUIRED "contig_reads_fastq.np1;contig_reads_${format}.np${n}")
      endif()
    endforeach()

    # Non-ACGT bases (N, n, IUPAC codes, gaps, an N at a FASTA line start) split reads: the --ufx output holds
    # exactly the k-mers on either side of them, counted, with X where a read was cut, and the contigs are the two
    # fragments (tests/data/contig_nonacgt.*, the expected files written by a separate script).
    add_test(NAME contig.reads_nonacgt.np${n}
             COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} $<TARGET_FILE:shoal-contig>
                     --reads ${PROJECT_SOURCE_DIR}/tests/data/contig_nonacgt.fq
                             ${PROJECT_SOURCE_DIR}/tests/data/contig_nonacgt.fa
                     --k 11 --min-count 2 --check --ufx ${CMAKE_CURRENT_BINARY_DIR}/contig_nonacgt.np${n}.ufx
                     --expected ${PROJECT_SOURCE_DIR}/tests/data/contig_nonacgt.expected.fa)
    set_tests_properties(contig.reads_nonacgt.np${n} PROPERTIES TIMEOUT 60 PROCESSORS ${procs}
                         ENVIRONMENT "${_contig_env}" LABELS contig FIXTURES_SETUP contig_nonacgt.np${n})
    add_test(NAME contig.reads_nonacgt_ufx.np${n}
             COMMAND ${CMAKE_COMMAND} -E compare_files ${PROJECT_SOURCE_DIR}/tests/data/contig_nonacgt.expected.ufx
                     ${CMAKE_CURRENT_BINARY_DIR}/contig_nonacgt.np${n}.ufx)
    set_tests_properties(contig.reads_nonacgt_ufx.np${n} PROPERTIES TIMEOUT 30 LABELS contig
                         FIXTURES_REQUIRED contig_nonacgt.np${n})

    # A malformed FASTQ stops every rank with the file, the line and what was expected.
    add_test(NAME contig.reads_malformed.np${n}
             COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} ${n} $<TARGET_FILE:shoal-contig>
                     --reads ${PROJECT_SOURCE_DIR}/tests/data/contig_bad.fq --k 21)
    set_tests_properties(contig.reads_malformed.np${n} PROPERTIES TIMEOUT 60 PROCESSORS ${procs}
                         ENVIRONMENT "${_contig_env}" LABELS contig
                         PASS_REGULAR_EXPRESSION "contig_bad.fq: line 159: expected a '\\+' separator line")
  endforeach()

  # k = 63 (the largest odd k of the 2-word k-mers), and the --ufx round trip: the solid k-mers written in reads mode
  # give the same contigs in UFX mode.
  add_test(NAME contig.reads_k63.np2
           COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:shoal-contig>
                   --reads ${_contig_reads_fastq_gz} --k 63 --min-count 4
                   --ufx ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_k63.ufx
                   --out ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_k63.fa
                   --genome ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_fastq.genome.fa --min-genome-coverage 0.95)
  add_test(NAME contig.ufx_roundtrip.np2
           COMMAND ${SHOAL_TEST_LAUNCH} ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:shoal-contig>
                   ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_k63.ufx
                   --expected ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_k63.fa)
  set_tests_properties(contig.reads_k63.np2 contig.ufx_roundtrip.np2 PROPERTIES TIMEOUT 60 PROCESSORS 2
                       ENVIRONMENT "${_contig_env}" LABELS contig)
  set_tests_properties(contig.reads_k63.np2 PROPERTIES FIXTURES_REQUIRED contig_reads FIXTURES_SETUP contig_k63_ufx)
  set_tests_properties(contig.ufx_roundtrip.np2 PROPERTIES FIXTURES_REQUIRED contig_k63_ufx)

  # The generated data: hairpins (error-free k-mers) and one set of reads (30x, 0.5% substitutions, both strands)
  # written four ways: the same reads, so every format must give the same contigs.
  foreach(shape hairpin hairpin_inside)
    string(REPLACE "_" "-" _shape_arg ${shape})
    add_test(NAME contig.generate_${shape}
             COMMAND $<TARGET_FILE:shoal-contig-gen> --length 3000 --k 31 --repeats 0 --seed 5 --shape ${_shape_arg}
                     --out ${CMAKE_CURRENT_BINARY_DIR}/contig_${shape})
    set_tests_properties(contig.generate_${shape} PROPERTIES FIXTURES_SETUP contig_${shape} LABELS contig TIMEOUT 60)
  endforeach()
  set(_contig_gen_reads --length 20000 --k 31 --repeats 0 --seed 21 --coverage 30 --read-length 100 --error-rate 0.005)
  set(_contig_gen_fastq --format fastq --read-files 2)
  set(_contig_gen_fasta_gz --format fasta --gzip --read-files 3)
  set(_contig_gen_fastq_gz --format fastq --gzip)
  set(_contig_gen_fasta --format fasta)
  foreach(format fastq fasta_gz fastq_gz fasta)
    add_test(NAME contig.generate_reads_${format}
             COMMAND $<TARGET_FILE:shoal-contig-gen> ${_contig_gen_reads} ${_contig_gen_${format}}
                     --out ${CMAKE_CURRENT_BINARY_DIR}/contig_reads_${format})
    set_tests_properties(contig.generate_reads_${format} PROPERTIES FIXTURES_SETUP contig_reads LABELS contig
                         TIMEOUT 60)
  endforeach()
endif()
