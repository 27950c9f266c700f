#!/usr/bin/env python3
"""Runs every shell command the docs show, so that they cannot drift.

    doc_commands.py --fusecal BIN --build DIR --src DIR [--list]

The commands: each line of README.md's ```sh / ```bash / ```console code blocks
(a line ending in a backslash continues on the next; a "$ " prompt is dropped),
and each line of results/*/commands.txt (a path to a fusecal binary at its start,
such as build/fusecal or where the benchmarks were run from, becomes the fusecal
under test; a line ending in "# doc-test: skip WHY" is listed, not run). They run in a temporary directory that
holds a copy of results/, with `fusecal` on PATH and `build/` naming the build,
in order: first each results folder's commands.txt (which remakes that folder's
documents, as the README's examples then read them), then README.md's blocks
top to bottom, so that a command may use what an earlier one wrote. Every
command runs with FUSECAL_TEST_FAST=1 (the shortest stopping settings, a sweep
ended after a few seconds: src/measure/calibrate.h) and must exit 0.

An HTML comment just above a code block says more about its commands:
    <!-- doc-test: skip WHY -->    not run (WHY is printed: it needs root, the network...)
    <!-- doc-test: needs gpu -->   run only where `fusecal list devices` finds a usable GPU
    <!-- doc-test: exit 0 1 -->    the exit statuses that pass
A command that names a device or backend (--device, --backend) this build and
machine cannot run (`fusecal list`) is skipped too. Skipped commands say why; the exit status is 0 when every command that ran passed, 1
when one failed, 77 when none could run.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```\s*(\w*)\s*$")
MARK = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
SHELLS = {"sh", "bash", "console", "shell"}
NAMED = re.compile(r"--(device|backend)[ =]([\w.,]+)")
FUSECAL_WORD = re.compile(r"^\S*/fusecal(?=\s|$)")


class Command:
    def __init__(self, text, where, skip=None, gpu=False, codes=(0,)):
        self.text, self.where, self.skip, self.gpu, self.codes = text, where, skip, gpu, codes


def readme_commands(path):
    """Commands of the shell code blocks, with what the marker above each says."""
    out, lines = [], open(path, encoding="utf-8").read().split("\n")
    marks, in_block, lang, pending, start = [], False, "", "", 0
    for no, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence and not in_block:
            in_block, lang = True, fence.group(1)
            continue
        if fence and in_block:
            in_block, marks = False, []
            continue
        if not in_block:
            m = MARK.match(line.strip())
            if m:
                marks.append(m.group(1))
            elif line.strip():
                marks = []
            continue
        if lang not in SHELLS:
            continue
        text = (line[2:] if line.startswith("$ ") else line).strip()
        if not pending:
            start = no
        if text.endswith("\\"):
            pending += text[:-1].rstrip() + " "
            continue
        text, pending = (pending + text).strip(), ""
        if not text or text.startswith("#"):
            continue
        cmd = Command(text, f"README.md:{start}")
        for mark in marks:
            word, _, rest = mark.partition(" ")
            if word == "skip":
                cmd.skip = rest or "marked skip"
            elif word == "needs" and rest == "gpu":
                cmd.gpu = True
            elif word == "exit":
                cmd.codes = tuple(int(c) for c in rest.split())
            else:
                raise SystemExit(f"README.md:{no}: unknown doc-test marker '{mark}'")
        out.append(cmd)
    return out


def as_on_path(text):
    """A command that starts with some path to a fusecal binary runs the one under test."""
    return FUSECAL_WORD.sub("fusecal", text, count=1)


def results_commands(src):
    out = []
    results = os.path.join(src, "results")
    for machine in sorted(os.listdir(results)):
        path = os.path.join(results, machine, "commands.txt")
        if not os.path.isfile(path):
            continue
        for no, line in enumerate(open(path, encoding="utf-8"), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                # a trailing "# doc-test: skip WHY" (a comment to the shell) keeps a line out of the run
                m = re.search(r"\s+#\s*doc-test:\s*skip\s+(.*)$", line)
                skip = m.group(1) if m else None
                if m:
                    line = line[:m.start()]
                out.append(Command(as_on_path(line), f"results/{machine}/commands.txt:{no}", skip=skip))
    return out


def unusable(fusecal):
    """The devices and backends this build and machine cannot run, with why."""
    out = {}
    for what in ("devices", "backends"):
        try:
            text = subprocess.run([fusecal, "list", what, "--format", "json"], capture_output=True, text=True,
                                  timeout=120).stdout
            for d in json.loads(text).get(what, []):
                if not d.get("usable"):
                    out[d["name"]] = d.get("why", "not usable here")
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            raise SystemExit(f"fusecal list {what}: {e}")
    return out


def why_skip(c, missing):
    """Why a command cannot run here: its marker, a GPU it needs, a device or backend it names that is missing."""
    if c.skip:
        return c.skip
    if c.gpu and "cuda" in missing:
        return "needs a GPU: " + missing["cuda"]
    for _, names in NAMED.findall(c.text):
        for name in names.split(","):
            if name in missing:
                return f"needs {name}: {missing[name]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusecal", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--list", action="store_true", help="print the commands and exit")
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    cmds = results_commands(a.src) + readme_commands(os.path.join(a.src, "README.md"))
    if a.list:
        for c in cmds:
            print(f"{c.where}: {c.text}" + (f"  [skip: {c.skip}]" if c.skip else "") + ("  [gpu]" if c.gpu else ""))
        return 0
    missing = unusable(a.fusecal)
    work = tempfile.mkdtemp(prefix="fusecal-docs-")
    try:
        shutil.copytree(os.path.join(a.src, "results"), os.path.join(work, "results"))
        os.makedirs(os.path.join(work, "bin"))
        os.symlink(os.path.abspath(a.fusecal), os.path.join(work, "bin", "fusecal"))
        os.symlink(os.path.abspath(a.build), os.path.join(work, "build"))
        for d in ("bench", "python", "patterns", "schemas", "examples"):  # read by commands, never written
            if os.path.isdir(os.path.join(a.src, d)):
                os.symlink(os.path.abspath(os.path.join(a.src, d)), os.path.join(work, d))
        env = dict(os.environ, FUSECAL_TEST_FAST="1", XDG_CACHE_HOME=os.path.join(work, "cache"),
                   PATH=os.path.join(work, "bin") + os.pathsep + os.environ.get("PATH", ""))
        ran = failed = skipped = 0
        for c in cmds:
            why = why_skip(c, missing)
            if why:
                skipped += 1
                print(f"skip {c.where}: {c.text}  ({why}: exit 77)")
                continue
            t0 = time.time()
            try:
                p = subprocess.run(["bash", "-o", "pipefail", "-c", c.text], cwd=work, env=env, capture_output=True,
                                   text=True, timeout=a.timeout)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = 124, f"timed out after {a.timeout:.0f} s"
            ran += 1
            if rc in c.codes:
                print(f"ok   {c.where}: {c.text}  (exit {rc}, {time.time() - t0:.1f} s)")
            else:
                failed += 1
                want = " or ".join(map(str, c.codes))
                print(f"FAIL {c.where}: {c.text}: exit {rc}, expected {want}")
                for line in err.strip().split("\n")[-8:]:
                    print("    " + line)
        print(f"{ran - failed} passed, {failed} failed, {skipped} skipped")
        return 1 if failed else 0 if ran else 77
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
