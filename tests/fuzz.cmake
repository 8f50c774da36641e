# Fuzzing (docs/testing.md, "Fuzzing"): the seeded driver runs every target of tests/fuzz/targets.hpp in CTest, in
# every build (one process, no MPI); with -DSHOAL_BUILD_FUZZERS=ON (clang: CXX=clang++) the libFuzzer binary
# shoal-fuzz runs each target (SHOAL_FUZZ_TARGET) for 10 s from its seed corpus (fuzz.libfuzzer.<target>).
find_package(ZLIB REQUIRED)
find_package(nlohmann_json REQUIRED)
set(SHOAL_FUZZ_TARGETS key_box settings kv_trace ufx reads reads_gzip fasta flights_message ordered_map_wire serialized_values)
set(_fuzz_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)

add_executable(fuzz_test fuzz_test.cpp)
target_link_libraries(fuzz_test PRIVATE shoal::shoal GTest::gtest GTest::gtest_main ZLIB::ZLIB nlohmann_json::nlohmann_json)
target_include_directories(fuzz_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/apps)
target_compile_definitions(fuzz_test PRIVATE SHOAL_FUZZ_CORPUS="${_fuzz_corpus}")
add_test(NAME fuzz.seeded COMMAND fuzz_test)
set_tests_properties(fuzz.seeded PROPERTIES TIMEOUT 120 LABELS fuzz WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

option(SHOAL_BUILD_FUZZERS "Build the libFuzzer targets (needs clang)" OFF)
if(SHOAL_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SHOAL_BUILD_FUZZERS needs clang's libFuzzer: configure with CXX=clang++ "
                        "(Debian: apt-get install clang), or leave it OFF for the seeded driver alone")
  endif()
  add_executable(shoal-fuzz fuzz/libfuzzer.cpp)
  target_link_libraries(shoal-fuzz PRIVATE shoal::shoal ZLIB::ZLIB nlohmann_json::nlohmann_json)
  target_include_directories(shoal-fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/apps)
  target_compile_options(shoal-fuzz PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(shoal-fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  foreach(name ${SHOAL_FUZZ_TARGETS})
    set(_work ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/${name})
    file(MAKE_DIRECTORY ${_work})
    # New inputs go to the build tree's corpus; the seeds are read from the source tree.
    add_test(NAME fuzz.libfuzzer.${name}
             COMMAND shoal-fuzz -max_total_time=10 -timeout=5 -rss_limit_mb=1024 -seed=1 ${_work} ${_fuzz_corpus}/${name})
    set_tests_properties(fuzz.libfuzzer.${name} PROPERTIES TIMEOUT 60 LABELS fuzz WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
                         ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0;SHOAL_FUZZ_TARGET=${name}")
  endforeach()
endif()
