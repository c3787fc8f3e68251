# Compiles each compat header alone (a file holding only its #include) as
# -std=${STD}, pedantic, warnings as errors (PopART's only as C++20); fails
# naming every header that does not compile. A header declaring functions
# that throw must also make the exception classes a program catches
# visible: poplar::poplar_error for Poplar's, and poputil::poplibs_error too
# for PopLibs' and GCL's. Run by ctest: cmake -DCXX=... -DSTD=c++11 -DSOURCE=...
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
  set(text "#include <${header}>\n")
  # Headers of types only (no function that throws) are exempt.
  set(typesOnly "^(poplar/(DebugContext|Interval|StreamCallback|SyncType|TargetType|Type|Vertex)|poplin/PlanningCache)\\.hpp$")
  if(header MATCHES "^(popops|poplin|popnn|poprand|poputil|gcl)/" AND
     NOT header MATCHES "${typesOnly}")
    string(APPEND text "static_assert(sizeof(poputil::poplibs_error) > 0, "
                       "\"poputil::poplibs_error\");\n")
  endif()
  if(header MATCHES "^(poplar|popops|poplin|popnn|poprand|poputil|gcl)/" AND
     NOT header MATCHES "${typesOnly}")
    string(APPEND text "static_assert(sizeof(poplar::poplar_error) > 0, "
                       "\"poplar::poplar_error\");\n")
  endif()
  file(WRITE ${file} "${text}")
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
