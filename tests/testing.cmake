# Test set-up shared by tests/*/CMakeLists.txt.
#
# Every doctest executable registers each of its test cases with ctest as a test of its own
# (tests/doctest_add_tests.cmake, doctest_discover_tests done over: it lists the cases after
# each build): cases run in parallel under `ctest -j`, each with its own timeout, and a case
# whose data is absent ends its process with 77 (tests/test_data.h, STRATA_SKIP), which ctest
# reports as skipped, never as passed.
#
#   strata_doctest(TARGET PREFIX NAME TIMEOUT SECONDS [SERIAL])
#
# The ctest names are "NAME:<test case>" (`ctest -R NAME` runs one executable's cases). SERIAL:
# the executable's cases never run at the same time as each other (they share sockets, agents
# or timing budgets), though they do alongside other tests. Each case runs with
# STRATA_CTEST_CASE=1, which makes a skip exit with 77 and checks that the --test-case filter
# matched exactly one case (tests/test_data.cpp).

# Real traces: vendored into the repository (tests/data/traces/README.md) and, when present,
# the shared folder beside the clone (CI has it); tests look in the first, then the second.
set(STRATA_VENDORED_TRACES_DIR "${PROJECT_SOURCE_DIR}/tests/data/traces")
set(STRATA_TRACES_DIR "${PROJECT_SOURCE_DIR}/../shared/traces" CACHE PATH "Real traces beside the clone (optional)")
set(STRATA_TEST_SKIP_CODE 77)

# strata_find_trace(VAR NAME): VAR = tests/data/traces/NAME, else ../shared/traces/NAME (which a
# test given it reports as absent: skipped).
function(strata_find_trace var name)
  if(EXISTS "${STRATA_VENDORED_TRACES_DIR}/${name}")
    set(${var} "${STRATA_VENDORED_TRACES_DIR}/${name}" PARENT_SCOPE)
  else()
    set(${var} "${STRATA_TRACES_DIR}/${name}" PARENT_SCOPE)
  endif()
endfunction()

# strata_shared_only_traces(VAR): the traces at the top of ../shared/traces that tests/data/traces
# does not hold (by name), as of configuring; empty when the folder is absent.
function(strata_shared_only_traces var)
  file(GLOB shared LIST_DIRECTORIES false "${STRATA_TRACES_DIR}/*.json" "${STRATA_TRACES_DIR}/*.json.gz")
  set(out "")
  foreach(f IN LISTS shared)
    get_filename_component(name "${f}" NAME)
    if(NOT EXISTS "${STRATA_VENDORED_TRACES_DIR}/${name}")
      list(APPEND out "${f}")
    endif()
  endforeach()
  list(SORT out)
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

function(strata_doctest target)
  cmake_parse_arguments(arg "SERIAL" "PREFIX;TIMEOUT" "" ${ARGN})
  if(NOT arg_PREFIX OR NOT arg_TIMEOUT)
    message(FATAL_ERROR "strata_doctest(${target}): PREFIX and TIMEOUT are required")
  endif()
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/test_data.cpp)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${target} PRIVATE doctest::doctest)
  target_compile_definitions(${target} PRIVATE
    STRATA_VENDORED_TRACES_DIR="${STRATA_VENDORED_TRACES_DIR}"
    STRATA_TRACES_DIR="${STRATA_TRACES_DIR}"
    STRATA_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data"
    STRATA_GOLDEN_DIR="${PROJECT_SOURCE_DIR}/tests/golden")
  set(props TIMEOUT ${arg_TIMEOUT} SKIP_RETURN_CODE ${STRATA_TEST_SKIP_CODE} ENVIRONMENT STRATA_CTEST_CASE=1)
  if(arg_SERIAL)
    list(APPEND props RESOURCE_LOCK ${target})
  endif()
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    BYPRODUCTS "${ctest_file}"
    COMMAND "${CMAKE_COMMAND}" -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "TEST_WORKING_DIR=${CMAKE_CURRENT_BINARY_DIR}" -D "TEST_PREFIX=${arg_PREFIX}:"
            -D "TEST_PROPERTIES=${props}" -D "CTEST_FILE=${ctest_file}"
            -P "${PROJECT_SOURCE_DIR}/tests/doctest_add_tests.cmake"
    VERBATIM)
  # Before the first build (or after a failed one) a placeholder test says so.
  file(WRITE "${include_file}"
    "if(EXISTS \"${ctest_file}\")\n  include(\"${ctest_file}\")\nelse()\n  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
