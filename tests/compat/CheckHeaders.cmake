# Compiles each compat header alone (a file holding only its #include) as
# -std=${STD}, pedantic, warnings as errors (PopART's only as C++20); fails
# naming every header that does not compile. Run by ctest: cmake -DCXX=... -DSTD=c++11 -DSOURCE=...
# -DWORK=... -P CheckHeaders.cmake
file(GLOB_RECURSE headers RELATIVE ${SOURCE}/compat/include
     ${SOURCE}/compat/include/*.hpp)
# PopART's headers reach Tessera's IR and sessions, which need C++20; the
# Poplar SDK's surface (poplar, PopLibs, gcl, popdist, pva) is what
# -std=c++11 projects include.
if(NOT STD STREQUAL "c++20")
  list(FILTER headers EXCLUDE REGEX "^popart/")
endif()
file(MAKE_DIRECTORY ${WORK})
set(failed)
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER ${header} stem)
  set(file ${WORK}/${STD}_${stem}.cpp)
  file(WRITE ${file} "#include <${header}>\n")
  execute_process(
    COMMAND ${CXX} -std=${STD} -fsyntax-only -Wall -Wextra -pedantic-errors
            -Werror -I${SOURCE}/compat/include -I${SOURCE}/include ${file}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(APPEND failed ${header})
    message("${header} does not compile as ${STD}:\n${out}")
  endif()
endforeach()
list(LENGTH headers total)
if(failed)
  message(FATAL_ERROR "${STD}: these compat headers do not compile alone: "
                      "${failed}")
endif()
message("${STD}: all ${total} compat headers compile alone")
