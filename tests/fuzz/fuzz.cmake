# Fuzzing build: clang, libFuzzer, ASan + UBSan, over the parsers only.
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFUSECAL_FUZZ=ON && cmake --build build-fuzz
#   ctest --test-dir build-fuzz        # each harness fuzzes FUSECAL_FUZZ_SECONDS, then replays regressions
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "FUSECAL_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang")
endif()
set(FUSECAL_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz test runs")

add_library(fusecal_parsers STATIC
  src/util.c src/signals.c src/jsonfile.c src/jsonschema.c src/stats.c src/bench.c
  src/pattern.c src/pattern_linear.c src/pattern_conv.c src/pattern_attention.c
  src/catalog.c src/verify.c src/record.c src/thresholds.c src/backend.c
  ${FUSECAL_EMBEDDED_C} ${FUSECAL_VERSION_C})
add_dependencies(fusecal_parsers fusecal_version)
target_include_directories(fusecal_parsers PUBLIC src)
target_compile_definitions(fusecal_parsers PUBLIC FUSECAL_PARSERS_ONLY)
# OpenMP pragmas compile to nothing here (-fopenmp-simd keeps only simd hints)
target_compile_options(fusecal_parsers PRIVATE -fsanitize=fuzzer-no-link -fopenmp-simd -Wno-pass-failed -O1 -g)
target_link_libraries(fusecal_parsers PUBLIC cjson m)

enable_testing()
foreach(h problem catalogue record json thresholds)
  add_executable(fuzz_${h} tests/fuzz/fuzz_${h}.c)
  target_compile_options(fuzz_${h} PRIVATE -fsanitize=fuzzer -O1 -g)
  target_link_options(fuzz_${h} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_${h} PRIVATE fusecal_parsers)
  add_test(NAME fuzz_${h}
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/fuzz/run.sh $<TARGET_FILE:fuzz_${h}>
            ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${h} ${PROJECT_SOURCE_DIR}/tests/fuzz/regressions/${h}
            ${FUSECAL_FUZZ_SECONDS})
  set_tests_properties(fuzz_${h} PROPERTIES LABELS "fuzz" TIMEOUT 900
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endforeach()
