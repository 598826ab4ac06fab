# strata_core_tests: the loader's unit, robustness and real-trace tests (doctest).
add_executable(strata_core_tests
  test_main.cpp
  test_util.cpp
  test_json_scan.cpp
  test_model.cpp
  test_bad_input.cpp
  test_real_traces.cpp
  test_job.cpp
  test_npu.cpp
)
target_link_libraries(strata_core_tests PRIVATE strata_core strata_warnings simdjson::simdjson doctest::doctest)
target_compile_definitions(strata_core_tests PRIVATE
  STRATA_TRACES_DIR="${STRATA_TRACES_DIR}"
  STRATA_TEST_DATA_DIR="${CMAKE_SOURCE_DIR}/tests/data"
  STRATA_GOLDEN_DIR="${CMAKE_SOURCE_DIR}/tests/golden")
add_test(NAME strata_core_tests COMMAND strata_core_tests)
set_tests_properties(strata_core_tests PROPERTIES TIMEOUT 600)
