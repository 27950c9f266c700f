"""function_length.py MAX FILE|DIR...: fails when a C function (of the files, or of
the .c files in the directories) is longer than MAX lines.

A function runs from the first line of its signature (a line that starts in
column 0) to the closing brace that ends its body (a '}' in column 0); its
body opens with a '{' alone in column 0, the style of the tree."""
import glob
import os
import sys


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line != "{":
            continue
        start = i - 1
        while start > 0 and lines[start][:1] in (" ", "\t"):  # a signature continued
            start -= 1
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("}")), len(lines) - 1)
        name = lines[start].split("(")[0].split()[-1].lstrip("*") if "(" in lines[start] else lines[start]
        yield name, start + 1, end - start + 1


def main():
    limit = int(sys.argv[1])
    files = [f for a in sys.argv[2:] for f in (sorted(glob.glob(os.path.join(a, "*.c"))) if os.path.isdir(a) else [a])]
    long_ones = [(f, n, at, length) for f in files for n, at, length in functions(f) if length > limit]
    counted = sum(1 for f in files for _ in functions(f))
    for f, n, at, length in long_ones:
        print(f"{f}:{at}: {n} is {length} lines long (at most {limit})")
    print(f"{counted} functions in {len(files)} files; {len(long_ones)} longer than {limit} lines")
    return 1 if long_ones or counted == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
