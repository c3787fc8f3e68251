# Runs an example and compares its standard output with an expected file,
# exactly except for one trailing newline. Standard error (logs, profile
# summaries) is not compared.
#
#   cmake -DEXPECTED=file -DRUN1="exe|arg|arg" [-DRUN2=...] -P CheckOutput.cmake
#
# RUN1, RUN2, ... are command lines whose words are separated by "|"; each
# is run in turn (a later one may read what an earlier one wrote) and each
# must exit with status 0 and print the expected text.

if(NOT DEFINED EXPECTED OR NOT DEFINED RUN1)
  message(FATAL_ERROR "CheckOutput.cmake needs -DEXPECTED=... and -DRUN1=...")
endif()
file(READ "${EXPECTED}" expected)
string(REGEX REPLACE "\n$" "" expected "${expected}")

set(index 1)
while(DEFINED RUN${index})
  set(run "${RUN${index}}")
  math(EXPR index "${index} + 1")
  string(REPLACE "|" ";" command "${run}")
  execute_process(COMMAND ${command}
    OUTPUT_VARIABLE actual
    ERROR_VARIABLE errors
    RESULT_VARIABLE status)
  string(REGEX REPLACE "\n$" "" actual "${actual}")
  string(REPLACE ";" " " shown "${command}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "'${shown}' exited with status ${status}\n"
      "--- stdout ---\n${actual}\n--- stderr ---\n${errors}")
  endif()
  if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "'${shown}' printed unexpected output\n"
      "--- expected (${EXPECTED}) ---\n${expected}\n"
      "--- actual ---\n${actual}\n--- stderr ---\n${errors}")
  endif()
endwhile()
