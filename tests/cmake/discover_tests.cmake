# Writes one ctest entry per Catch2 test case of a test binary (cmake -P,
# after each link of the binary; tests/CMakeLists.txt crawler_add_test).
#
# Why not Catch2's own catch_discover_tests: it splits the list of names on
# ';', and ~40 of our case names hold one ("...; the truth set, once"). A
# Catch test spec cannot hold a ';' either (a name is matched whole, with '*'
# only at its ends), so a case whose name has one is selected by the part
# before its first ';' plus '*', or by '*' plus the part after its last ';',
# whichever matches that case alone; the ctest name shows ';' as ','.
#
# Each entry runs its case with test_costs.cmake's arguments (-w NoTests),
# fails on "no assertions" and has the default TIMEOUT (the measured costs
# replace it: tests/CMakeLists.txt). A case tagged with one of
# TEST_TAG_LABELS also gets that tag as a label (the sanitizer presets
# exclude the label no-sanitizers).
#
# In: TEST_EXECUTABLE, TEST_PREFIX, TEST_LABELS ('|'-separated), CTEST_FILE,
# TEST_TAG_LABELS ('|'-separated tags, without brackets).
cmake_policy(SET CMP0007 NEW)  # list() keeps empty elements (then filtered)
include("${CMAKE_CURRENT_LIST_DIR}/test_costs.cmake")

# Sets VAR to the names of the cases the test spec SPEC ("": all but the
# hidden ones) selects, as a list: ';' and brackets, which would break it,
# held as placeholders.
function(case_names spec var)
  execute_process(COMMAND "${TEST_EXECUTABLE}" ${spec} --list-test-names-only
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  # Catch exits with the number of cases listed; a crash is a word
  # ("Segmentation fault").
  if(NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${TEST_EXECUTABLE} ${spec} --list-test-names-only failed: "
                        "${rc}\n${out}")
  endif()
  string(REPLACE ";" "<semi>" out "${out}")
  string(REPLACE "[" "<open>" out "${out}")
  string(REPLACE "]" "<close>" out "${out}")
  string(REPLACE "\n" ";" names "${out}")
  list(FILTER names EXCLUDE REGEX "^$")
  set(${var} "${names}" PARENT_SCOPE)
endfunction()

case_names("" lines)
if(lines STREQUAL "")
  message(FATAL_ERROR "${TEST_EXECUTABLE} --list-test-names-only listed no case")
endif()
string(REPLACE "|" ";" labels "${TEST_LABELS}")

# The names of the cases tagged [TAG], each as set tag_<md5 of the name>.
string(REPLACE "|" ";" tag_labels "${TEST_TAG_LABELS}")
foreach(tag IN LISTS tag_labels)
  case_names("[${tag}]" tagged)
  foreach(t IN LISTS tagged)
    string(MD5 key "${t}")
    list(APPEND tag_${key} "${tag}")
  endforeach()
endforeach()

# Catch's spec syntax: ',' separates specs, '[' opens a tag, '\' escapes.
function(escape_spec text var)
  foreach(c "\\" "," "[" "]")
    string(REPLACE "${c}" "\\${c}" text "${text}")
  endforeach()
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# LINE with its placeholders undone (';' shown as SEMI).
function(restore line semi var)
  string(REPLACE "<semi>" "${semi}" line "${line}")
  string(REPLACE "<open>" "[" line "${line}")
  string(REPLACE "<close>" "]" line "${line}")
  set(${var} "${line}" PARENT_SCOPE)
endfunction()

# How many names start (MODE prefix) or end (MODE suffix) with PART.
function(count_matches part mode var)
  set(n 0)
  string(LENGTH "${part}" len)
  foreach(other IN LISTS lines)
    restore("${other}" ";" other)
    string(LENGTH "${other}" olen)
    if(olen LESS len)
      continue()
    endif()
    if(mode STREQUAL "prefix")
      string(SUBSTRING "${other}" 0 ${len} piece)
    else()
      math(EXPR from "${olen} - ${len}")
      string(SUBSTRING "${other}" ${from} ${len} piece)
    endif()
    if(piece STREQUAL part)
      math(EXPR n "${n} + 1")
    endif()
  endforeach()
  set(${var} ${n} PARENT_SCOPE)
endfunction()

string(JOIN " " catch_args ${CRAWLER_CATCH_ARGS})
set(script "")
foreach(line IN LISTS lines)
  restore("${line}" ";" name)
  restore("${line}" "," ctest_name)
  if(line MATCHES "<semi>")
    string(REGEX REPLACE "<semi>.*$" "" head "${line}")
    string(REGEX REPLACE "^.*<semi>" "" tail "${line}")
    restore("${head}" ";" head)
    restore("${tail}" ";" tail)
    count_matches("${head}" prefix n_head)
    count_matches("${tail}" suffix n_tail)
    if(n_head EQUAL 1)
      escape_spec("${head}" spec)
      string(APPEND spec "*")
    elseif(n_tail EQUAL 1)
      escape_spec("${tail}" spec)
      string(PREPEND spec "*")
    else()
      message(FATAL_ERROR "${TEST_EXECUTABLE}: no spec selects '${name}' alone: "
                          "make the part before its first ';' or after its last one unique")
    endif()
  else()
    escape_spec("${name}" spec)
  endif()
  if(spec MATCHES "^-")
    message(FATAL_ERROR "${TEST_EXECUTABLE}: '${name}' starts with '-', "
                        "which Catch reads as an option: rename the case")
  endif()
  string(MD5 key "${line}")
  set(case_labels ${labels} ${tag_${key}})
  string(APPEND script "add_test([==[${TEST_PREFIX}${ctest_name}]==] \"${TEST_EXECUTABLE}\" "
                       "[==[${spec}]==] ${catch_args})\n"
                       "set_tests_properties([==[${TEST_PREFIX}${ctest_name}]==] "
                       "PROPERTIES LABELS \"${case_labels}\" "
                       "FAIL_REGULAR_EXPRESSION [==[${CRAWLER_CATCH_FAIL_REGEX}]==] "
                       "TIMEOUT ${CRAWLER_DEFAULT_TIMEOUT})\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
