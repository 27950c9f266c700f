#!/bin/sh
# Prints a name for this machine's results folder: cpu-<model>-f<family>m<model>-<cores>c,
# e.g. cpu-amd-epyc-f26m2-2c or cpu-intel-xeon-f6m207-2c. The family and model numbers
# tell CPU generations apart that share a marketing name (AMD family 25 is Zen 3/Zen 4,
# 26 is Zen 5; Intel family 6 model 143 is Sapphire Rapids, 207 Emerald Rapids).
# Trademark marks and the words "Processor"/"CPU" are dropped from the name.
# A CPU whose AVX-512 is not exposed (a VM can hide it from a Zen 4) gets "-avx2"
# or, below AVX2, "-sse": fusecal's host kernels, oneDNN and OpenBLAS then run other
# code, and its figures are not the AVX-512 machine's, e.g. cpu-amd-epyc-f25m17-2c-avx2.
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 |
    sed -e 's/([RrCc]\{1,2\})//g; s/([Tt][Mm])//g; s/[[:space:]]Processor\b//g; s/[[:space:]]CPU\b//g' |
    tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//' | tr 'A-Z' 'a-z')
fam=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
mod=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)
flags=$(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo | head -1)
isa=
case " $flags " in
*" avx512f "*) ;;
*" avx2 "*) isa=-avx2 ;;
*) isa=-sse ;;
esac
echo "cpu-${model}-f${fam}m${mod}-$(nproc)c${isa}"
