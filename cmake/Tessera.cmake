# Helpers shared by every folder: one library per layer, one test binary per
# test folder.

# tessera_library(NAME SOURCES ... DEPS ...): a static library for one layer
# with its public include directory and declared dependencies.
function(tessera_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# tessera_test(NAME SOURCES ... DEPS ... [LABELS ...]): a GoogleTest binary
# whose tests ctest discovers one by one.
function(tessera_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest_main GTest::gmock)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${ARG_LABELS}"
    ENVIRONMENT "TESSERA_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache;TESSERA_SYSTEM_DIR=${PROJECT_BINARY_DIR}/test-system")
endfunction()
