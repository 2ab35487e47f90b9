# Warnings are errors for rdx's own targets (not for third-party headers, which come in as SYSTEM).
function(rdx_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wshadow=local -Wno-unknown-warning-option -Wnon-virtual-dtor
                         -Wno-missing-field-initializers)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
endfunction()

# rdx_test(name SOURCES ... LIBS ...): a gtest executable registered with ctest; TIMEOUT bounds every case.
function(rdx_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  rdx_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()
