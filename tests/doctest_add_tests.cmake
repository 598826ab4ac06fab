# Writes CTEST_FILE: one ctest test per doctest test case of TEST_EXECUTABLE. Run at build time
# (cmake -P) by strata_doctest (tests/testing.cmake) after the executable links.
#
# Like doctest's own doctestAddTests.cmake, but test case names may hold what CMake lists and
# doctest's --test-case filters treat specially (; [ ] , \): the filter puts doctest's
# any-one-character wildcard '?' in their place, the ctest name ',' for ';', and every test
# checks when it runs that its filter matched exactly one case (tests/test_data.cpp).
#
# Inputs (-D): TEST_EXECUTABLE, TEST_WORKING_DIR, TEST_PREFIX, TEST_PROPERTIES (a list of
# property names and values, none holding ';'), CTEST_FILE.
cmake_minimum_required(VERSION 3.25)  # script mode: the policies of the project (IN_LIST)
if(NOT EXISTS "${TEST_EXECUTABLE}")
  message(FATAL_ERROR "doctest_add_tests: ${TEST_EXECUTABLE} does not exist")
endif()
execute_process(
  COMMAND "${TEST_EXECUTABLE}" --list-test-cases --no-version
  OUTPUT_VARIABLE output
  RESULT_VARIABLE result
  WORKING_DIRECTORY "${TEST_WORKING_DIR}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "doctest_add_tests: ${TEST_EXECUTABLE} --list-test-cases failed (${result}):\n${output}")
endif()

# Keep ; [ ] out of the list of lines (a ';' would split a name, an unbalanced bracket would
# join names): placeholders, put back per name.
string(REPLACE ";" "@STRATA_SEMICOLON@" output "${output}")
string(REPLACE "[" "@STRATA_LBRACKET@" output "${output}")
string(REPLACE "]" "@STRATA_RBRACKET@" output "${output}")
string(REPLACE "\n" ";" lines "${output}")

set(props "")
foreach(p IN LISTS TEST_PROPERTIES)
  string(APPEND props " [==[${p}]==]")
endforeach()

set(script "")
set(seen "")
set(count 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "" OR line MATCHES "^====" OR line MATCHES "^@STRATA_LBRACKET@doctest@STRATA_RBRACKET@ ")
    continue()
  endif()
  # The filter: the name, its special characters as '?'.
  set(filter "${line}")
  foreach(special "@STRATA_SEMICOLON@" "@STRATA_LBRACKET@" "@STRATA_RBRACKET@" "," "\\")
    string(REPLACE "${special}" "?" filter "${filter}")
  endforeach()
  # The ctest name: the name with its brackets, ',' for ';'.
  set(name "${line}")
  string(REPLACE "@STRATA_SEMICOLON@" "," name "${name}")
  string(REPLACE "@STRATA_LBRACKET@" "[" name "${name}")
  string(REPLACE "@STRATA_RBRACKET@" "]" name "${name}")
  set(name "${TEST_PREFIX}${name}")
  string(SHA1 key "${name}")
  if(key IN_LIST seen)  # two cases of one name: the one test runs both and fails, saying so
    continue()
  endif()
  list(APPEND seen "${key}")
  math(EXPR count "${count} + 1")
  string(APPEND script
    "add_test([==[${name}]==] [==[${TEST_EXECUTABLE}]==] [==[--test-case=${filter}]==])\n"
    "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${TEST_WORKING_DIR}]==]${props})\n")
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "doctest_add_tests: ${TEST_EXECUTABLE} lists no test case:\n${output}")
endif()
file(WRITE "${CTEST_FILE}" "${script}")
