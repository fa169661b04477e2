# Helpers shared by every CMakeLists.txt of the project.

# Warnings for the project's own code.
function(blq_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wno-unused-parameter)
endfunction()

# blq_module(<name> SOURCES <files...> [DEPENDS <modules...>])
# The object library blq_<name> for the module in the current folder. It
# sees include/ (the public API), its own folder, its own shared/ folder,
# and for each module it DEPENDS on: util/ (every util header is meant for
# the modules), or that module's shared/ folder (what it offers the others;
# the rest of its folder is private). A source or header of the module
# that includes a path climbing out of it ("../x.h") stops the configure
# step: such a path would reach past the include directories.
function(blq_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPENDS" ${ARGN})
  set(t blq_${name})
  add_library(${t} OBJECT ${M_SOURCES})
  set_target_properties(${t} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR})
  if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/shared)
    target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/shared)
  endif()
  foreach(dep ${M_DEPENDS})
    if(dep STREQUAL "util")
      target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/util)
    elseif(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${dep}/shared)
      target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/${dep}/shared)
    else()
      message(FATAL_ERROR "blq_module(${name}): module '${dep}' offers no shared/ folder")
    endif()
  endforeach()
  target_compile_definitions(${t} PRIVATE _GNU_SOURCE)
  target_link_libraries(${t} PRIVATE Threads::Threads)
  blq_warnings(${t})
  blq_sanitize(${t})
  file(GLOB_RECURSE own_files ${CMAKE_CURRENT_SOURCE_DIR}/*.c ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  foreach(f ${own_files})
    file(STRINGS ${f} bad REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">]*\\.\\./")
    if(bad)
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${f})
      message(FATAL_ERROR "${rel}: includes a path out of module '${name}' (${bad}); "
        "include by name what the module's DEPENDS offer (docs/modules.md)")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY BLQ_MODULES ${t})
endfunction()

# Sanitizers are set per target, never through global flags. Every
# sanitizer build compiles ck with CK_USE_CC_BUILTINS=1: compiler builtins
# instead of ck's inline assembly, which no sanitizer sees into; a TSan
# build then takes ck's atomics from util/ck_tsan.h (why: there).
function(blq_sanitize target)
  if(NOT BLQ_SANITIZE STREQUAL "")
    target_compile_definitions(${target} PRIVATE CK_USE_CC_BUILTINS=1)
  endif()
  if(BLQ_SANITIZE STREQUAL "address")
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  elseif(BLQ_SANITIZE STREQUAL "thread")
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=thread)
  elseif(BLQ_SANITIZE STREQUAL "fuzzer")
    # libFuzzer (clang only): coverage for the library, ASan everywhere;
    # the fuzz target itself links -fsanitize=fuzzer (tests/CMakeLists.txt).
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address
      -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address)
  elseif(NOT BLQ_SANITIZE STREQUAL "")
    message(FATAL_ERROR "BLQ_SANITIZE: must be empty, 'address', 'thread' or 'fuzzer' (clang), got '${BLQ_SANITIZE}'")
  endif()
endfunction()

# blq_criterion_one_timeout(<test> <sources...>)
# A Criterion test program may set one timeout only: every `.timeout = N`
# in its sources (TestSuite or Test, comments included) must be the same
# N, or 0; else the configure step stops. Why: Criterion 2.4.1 keeps each
# running case's timeout in BoxFort's list of deadlines, sorted, and
# BoxFort 0.1.2's bxfi_push_timeout (src/timeout-posix.c, statically
# linked into libcriterion.so.3) inserts a deadline earlier than one in
# the list with `*nptr = req` and never sets req->next, so every request
# after that point falls off the list. Such a request is never freed (nor
# enforced: that case can no longer time out), and LeakSanitizer reports
# the runner's 48-byte calloc from bxfi_push_timeout at exit, after a run
# whose cases all passed. A case with a longer timeout running beside
# (--jobs 2) a later case with a shorter one is all it takes:
# balancer_test (suite 20 s, steady_load_does_not_flap 30 s) failed 46 of
# 50 ASan runs so. With one timeout per program the deadlines come in the
# order they are pushed (one runner thread, now + N), each goes to the end
# of the list, and nothing is lost. No LeakSanitizer suppression can
# single out that frame: libcriterion.so.3 is stripped, the report names
# only "libcriterion.so.3+0x1a332", and a suppression matching the module
# hides every leak of every case (tests/asan_leak_guard.c).
function(blq_criterion_one_timeout test)
  set(values "")
  foreach(src ${ARGN})
    if(NOT IS_ABSOLUTE "${src}")
      set(src "${CMAKE_CURRENT_SOURCE_DIR}/${src}")
    endif()
    if(NOT EXISTS "${src}")
      continue()
    endif()
    file(STRINGS "${src}" lines REGEX "\\.timeout[ \t]*=")
    foreach(line ${lines})
      string(REGEX MATCHALL "\\.timeout[ \t]*=[ \t]*[0-9.]+" found "${line}")
      foreach(f ${found})
        string(REGEX REPLACE ".*=[ \t]*" "" v "${f}")
        if(NOT v MATCHES "^0*(\\.0*)?$")
          list(APPEND values "${v}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES values)
  list(LENGTH values n)
  if(n GREATER 1)
    string(REPLACE ";" ", " shown "${values}")
    message(FATAL_ERROR "${test}: Criterion timeouts ${shown} in one program; give its suites "
      "and cases one timeout (a longer case beside a shorter one loses BoxFort's timeout "
      "requests: a 48-byte leak under ASan and a timeout never enforced; "
      "cmake/blq_helpers.cmake, blq_criterion_one_timeout)")
  endif()
endfunction()

# blq_test(NAME <name> SOURCES <files...> [CRITERION] [TIMEOUT <s>] [ARGS <args...>])
# Registers a test with a TIMEOUT, so a deadlock fails instead of hanging.
# CRITERION suites in TSan builds: Criterion 2.4.1 aborts under
# ThreadSanitizer (Snaipe/Criterion#274), so there the same sources build
# against tests/tsan_shim, a small stand-in for the part of its API they use.
function(blq_test)
  cmake_parse_arguments(T "CRITERION" "NAME;TIMEOUT" "SOURCES;ARGS;LIBS" ${ARGN})
  set(shim OFF)
  if(T_CRITERION AND BLQ_SANITIZE STREQUAL "thread")
    set(shim ON)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(shim)
    add_executable(${T_NAME} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/tests/tsan_shim/shim_runner.c)
    target_include_directories(${T_NAME} BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/tests/tsan_shim)
    target_link_libraries(${T_NAME} PRIVATE m)
    # An assertion without a message passes an empty format string.
    target_compile_options(${T_NAME} PRIVATE -Wno-format-zero-length)
  else()
    add_executable(${T_NAME} ${T_SOURCES})
  endif()
  target_link_libraries(${T_NAME} PRIVATE blq_static ${T_LIBS})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${T_NAME} PRIVATE _GNU_SOURCE)
  blq_warnings(${T_NAME})
  blq_sanitize(${T_NAME})
  if(T_CRITERION)
    blq_criterion_one_timeout(${T_NAME} ${T_SOURCES})
  endif()
  if(T_CRITERION AND NOT shim)
    target_link_libraries(${T_NAME} PRIVATE PkgConfig::CRITERION)
    # --jobs 2: the machine has two cores; each test runs in its own process.
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --jobs 2 ${T_ARGS})
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  endif()
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT})
  blq_sanitizer_env(${T_NAME})
endfunction()

# Sanitizer runtime options for a registered test: any report fails it.
# No LeakSanitizer suppressions (LSAN_OPTIONS is set empty, so none come
# from the caller's environment either): LSan matches a suppression
# against every frame of an allocation's stack, and every allocation of a
# Criterion test has libcriterion's test main on its stack, so one
# "leak:libcriterion" hid every leak of every suite. tests/asan_leak_guard
# fails if that ever comes back (docs/testing.md, "Leaks").
function(blq_sanitizer_env test)
  if(BLQ_SANITIZE STREQUAL "address")
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
      "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1"
      "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
      "LSAN_OPTIONS=")
  elseif(BLQ_SANITIZE STREQUAL "thread")
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
      "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")
  endif()
endfunction()
