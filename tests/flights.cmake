# The live-flights application (apps/flights): generator, loaders, protocol and the map query at 1-2 ranks; and, with
# the app built (SHOAL_BUILD_BENCH), two browser tests of shoal-flights at 2 ranks in headless Chromium (label
# browser; they skip, exit 77, only where Selenium / Chromium / chromedriver are not installed).
shoal_add_mpi_test(flights SOURCES flights_test.cpp RANKS 1 2 TIMEOUT 120)
target_include_directories(flights_test PRIVATE ${PROJECT_SOURCE_DIR}/apps)
find_package(nlohmann_json REQUIRED)
target_link_libraries(flights_test PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(flights_test PRIVATE SHOAL_FLIGHTS_AIRPORTS="${PROJECT_SOURCE_DIR}/data/airports.csv")
target_compile_options(flights_test PRIVATE -Wall -Wextra)

if(SHOAL_BUILD_BENCH)
  # Debian's python3 has python3-selenium; a python3 earlier on PATH (pyenv, venv) may not.
  find_program(SHOAL_SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(NOT SHOAL_SYSTEM_PYTHON)
    find_program(SHOAL_SYSTEM_PYTHON NAMES python3 REQUIRED)
  endif()
  set(_flights_browser ${SHOAL_SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/flights_browser.py
      --mpiexec ${MPIEXEC_EXECUTABLE} --binary $<TARGET_FILE:shoal-flights>)
  add_test(NAME flights.browser COMMAND ${_flights_browser} --mode browser
                                        --screenshot ${CMAKE_CURRENT_BINARY_DIR}/flights.png)
  add_test(NAME flights.malformed COMMAND ${_flights_browser} --mode malformed)
  set_tests_properties(flights.browser flights.malformed PROPERTIES
                       TIMEOUT 120 PROCESSORS 2 SKIP_RETURN_CODE 77 LABELS browser
                       ENVIRONMENT "${SHOAL_TEST_ENV}")
endif()
