/* precision.h — what a dtype does to values, on the host: rounding to bf16, fp16
 * and tf32 (the workload's inputs, the CUDA upload and download all use these), so
 * that the float64 reference sees exactly the values a device computes with; and
 * the tolerance a problem's output is verified against, from the error analysis in
 * precision.c.
 *
 * Every rounding is to nearest, ties to even. NaN stays NaN (quiet, sign kept),
 * ±Inf stays ±Inf, a finite value beyond the format's largest rounds to ±Inf as
 * IEEE rounding does, and subnormals are kept (fp16's below 2^-14, and those of
 * the 8-bit exponent of bf16 and tf32).
 */
#ifndef FC_PRECISION_H
#define FC_PRECISION_H

#include "pattern.h"

/* bfloat16: 8-bit exponent, 7-bit mantissa; the top 16 bits of a float. */
uint16_t fc_float_to_bf16(float x);
float fc_bf16_to_float(uint16_t h);
/* IEEE binary16: 5-bit exponent, 10-bit mantissa, largest finite 65504. */
uint16_t fc_float_to_fp16(float x);
float fc_fp16_to_float(uint16_t h);
/* TF32: 8-bit exponent, 10-bit mantissa, held in a float whose low 13 bits are 0. */
float fc_round_tf32(float x);
/* x as a tensor of dtype dt holds it (fp32: x itself). */
float fc_round_to_dtype(float x, fc_dtype dt);

/* Unit roundoff of a dtype's storage (what a written tensor holds: fp32 for tf32)
 * and of its tensor-core operands (tf32: 2^-11). */
double fc_dtype_storage_roundoff(fc_dtype dt);
double fc_dtype_operand_roundoff(fc_dtype dt);

/* The relative L2 error ‖out − ref‖/‖ref‖ a correct implementation of problem p
 * stays within (both variants), over many outputs: a function of its dtype, its
 * chain of ops and its longest sum. */
double fc_problem_tolerance(const fc_problem *p);
/* The same over a norm of `outputs` nonzero reference values of RMS out_rms
 * (INFINITY: many of a size fp16 holds to its precision): wider below 36
 * outputs, where they can all be small against the values rounded on the way, and
 * for fp16 outputs small enough to be held to an absolute 2^-24 (precision.c). Past
 * 1 where no norm over so few bounds the arithmetic. And the factor over the RMS
 * error it applies (3 over many outputs). */
double fc_problem_tolerance_for(const fc_problem *p, double outputs, double out_rms);
double fc_tolerance_factor(double outputs);

#endif
