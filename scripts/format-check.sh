#!/bin/sh
# Checks the C and CUDA sources against .clang-format without changing them:
# clang-format --dry-run --Werror over src/, tests/ and kernels/ (or the files
# given), one warning per place that differs; exit status 0 when none does,
# 1 when some do, 2 when clang-format is missing. CLANG_FORMAT picks the binary
# (clang-format 14 or newer).
set -eu
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "format-check: '$cf' not found (apt-get install clang-format)" >&2
    exit 2
fi
if [ $# -gt 0 ]; then
    "$cf" --dry-run --Werror --style=file "$@" || exit 1
    exit 0
fi
find src tests kernels -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
    sort -z | xargs -0 "$cf" --dry-run --Werror --style=file || exit 1
