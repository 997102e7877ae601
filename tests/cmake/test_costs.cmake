# What every ctest entry of a Catch2 binary gets (tests/CMakeLists.txt's
# named entries, and discover_tests.cmake's one entry per case):
#
# - `-w NoTests` on the command line: a test spec that matches no case exits
#   2 instead of 0, so a renamed case or tag fails its entry instead of
#   passing without running (Catch2 2.13 takes one -w only);
# - FAIL_REGULAR_EXPRESSION on Catch's "assertions: - none -": a case, or a
#   section picked with -c, that ran and asserted nothing fails (what
#   -w NoAssertions would say, for the entries that already use -w NoTests);
# - TIMEOUT from the measured costs (tests/cmake/ctest-costs-asan.txt, ASan
#   seconds: every build is faster but TSan's, which runs only the
#   concurrency entries): 10x the cost, at least 600 s, so a hang fails its
#   entry instead of the whole run at CI's limit;
# - COST from the same file when CRAWLER_TEST_ORDER_BY_COST is on (the asan
#   preset): ctest -j starts the longest entries first. ctest 3.25 keys its
#   own CTestCostData.txt by a name's first word, so names with spaces (every
#   case's) could not be ordered through that file; the COST property has no
#   such limit.
#
# The costs file is CTestCostData.txt's lines (NAME RUNS SECONDS, up to its
# "---"), written by scripts/update-test-costs.sh; the test_entries_check
# entry fails on a line that names no entry. The costs are read at configure
# time (the file is a configure dependency), so a changed file reaches every
# entry without relinking its program.

set(CRAWLER_CATCH_ARGS -w NoTests --durations no)
set(CRAWLER_CATCH_FAIL_REGEX "assertions: - none -")
set(CRAWLER_DEFAULT_TIMEOUT 1500)  # an entry with no cost measured yet

# Reads FILE: sets crawler_cost_<md5 of the name> to the seconds of each
# line, and crawler_cost_names to the names (brackets as <open>, <close>:
# a list element with one would break the list).
macro(crawler_read_test_costs file)
  file(READ "${file}" _costs_text)
  string(REPLACE "[" "<open>" _costs_text "${_costs_text}")
  string(REPLACE "]" "<close>" _costs_text "${_costs_text}")
  string(REPLACE "\n" ";" _costs_lines "${_costs_text}")
  set(crawler_cost_names "")
  foreach(_costs_line IN LISTS _costs_lines)
    if(_costs_line MATCHES "^(.+) ([0-9]+) ([0-9.e+-]+)$")
      set(_costs_seconds "${CMAKE_MATCH_3}")
      list(APPEND crawler_cost_names "${CMAKE_MATCH_1}")
      string(REPLACE "<open>" "[" _costs_name "${CMAKE_MATCH_1}")
      string(REPLACE "<close>" "]" _costs_name "${_costs_name}")
      string(MD5 _costs_key "${_costs_name}")
      set(crawler_cost_${_costs_key} "${_costs_seconds}")
    endif()
  endforeach()
endmacro()

# Sets VAR to the properties (a list for set_tests_properties' PROPERTIES)
# that entry NAME gets from the costs crawler_read_test_costs read: TIMEOUT,
# and COST if ORDER_BY_COST.
function(crawler_cost_properties name order_by_cost var)
  string(MD5 key "${name}")
  if(NOT DEFINED crawler_cost_${key})
    set(${var} TIMEOUT ${CRAWLER_DEFAULT_TIMEOUT} PARENT_SCOPE)
    return()
  endif()
  set(cost "${crawler_cost_${key}}")
  string(REGEX REPLACE "[.eE].*$" "" whole "${cost}")
  if(whole STREQUAL "")
    set(whole 0)
  endif()
  math(EXPR timeout "${whole} * 10")
  if(timeout LESS 600)
    set(timeout 600)
  endif()
  set(props TIMEOUT ${timeout})
  if(order_by_cost)
    list(APPEND props COST ${cost})
  endif()
  set(${var} "${props}" PARENT_SCOPE)
endfunction()

# Writes FILE, a ctest script that gives every entry named in the costs its
# properties (tests/CMakeLists.txt includes it after the discovered entries;
# a name that is no entry is ignored by ctest, and reported by
# test_entries_check).
function(crawler_write_cost_properties file order_by_cost)
  set(script "")
  foreach(n IN LISTS crawler_cost_names)
    string(REPLACE "<open>" "[" n "${n}")
    string(REPLACE "<close>" "]" n "${n}")
    crawler_cost_properties("${n}" "${order_by_cost}" props)
    string(JOIN " " props_text ${props})
    string(APPEND script "set_tests_properties([==[${n}]==] PROPERTIES ${props_text})\n")
  endforeach()
  file(WRITE "${file}" "${script}")
endfunction()
