# Fuzzing build: clang, libFuzzer, ASan + UBSan, over the core and report layers
# (the parsers: problem strings, catalogue and sweep files, records, thresholds, JSON).
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFUSECAL_FUZZ=ON && cmake --build build-fuzz
#   ctest --test-dir build-fuzz        # each harness fuzzes FUSECAL_FUZZ_SECONDS, then replays regressions
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "FUSECAL_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang")
endif()
set(FUSECAL_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz test runs")

enable_testing()
foreach(h problem catalogue record json thresholds network)
  add_executable(fuzz_${h} tests/fuzz/fuzz_${h}.c)
  target_compile_options(fuzz_${h} PRIVATE -fsanitize=fuzzer -O1 -g)
  target_link_options(fuzz_${h} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_${h} PRIVATE fusecal_report fusecal_core)
  add_test(NAME fuzz_${h}
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/fuzz/run.sh $<TARGET_FILE:fuzz_${h}>
            ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${h} ${PROJECT_SOURCE_DIR}/tests/fuzz/regressions/${h}
            ${FUSECAL_FUZZ_SECONDS})
  set_tests_properties(fuzz_${h} PROPERTIES LABELS "fuzz" TIMEOUT 900
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endforeach()
