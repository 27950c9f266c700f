#!/bin/sh
# Prints a name for this machine's results folder: cpu-<model>-f<family>m<model>-<cores>c,
# e.g. cpu-amd-epyc-f26m2-2c. The family and model numbers tell CPU generations apart
# that share a marketing name (AMD family 25 is Zen 3/Zen 4, 26 is Zen 5).
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
fam=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
mod=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "cpu-${model}-f${fam}m${mod}-$(nproc)c"
