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
  test_importers.cpp
)
target_link_libraries(strata_core_tests PRIVATE strata_core strata_warnings simdjson::simdjson doctest::doctest)
strata_doctest(strata_core_tests PREFIX strata_core_tests TIMEOUT 300)
