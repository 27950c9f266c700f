/* record.c — calibration documents to and from JSON. */
#include "record.h"
#include "jsonfile.h"
#include "jsonschema.h"
#include "kind.h"
#include "precision.h"
#include "settings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CALIBRATION_SCHEMA (fc_kinds[FC_KIND_calibration].schema)

void fc_stop_defaults(fc_stop *s)
{
    s->min_samples = (int)fc_setting_default(FC_SET_MIN_SAMPLES);
    s->min_time = fc_setting_default(FC_SET_MIN_TIME);
    s->max_noise = fc_setting_default(FC_SET_MAX_NOISE);
    s->max_time = fc_setting_default(FC_SET_MAX_TIME);
    s->max_samples = (int)fc_setting_default(FC_SET_MAX_SAMPLES);
}

void fc_settings_defaults(fc_settings *s)
{
    memset(s, 0, sizeof *s);
    fc_strlcpy(s->sweep, "custom", sizeof s->sweep);
    s->threshold = 0;
    fc_stop_defaults(&s->stop);
    s->target_sample = fc_setting_default(FC_SET_TARGET_SAMPLE);
    s->rounds = (int)fc_setting_default(FC_SET_ROUNDS);
    s->run_noise = fc_setting_default(FC_SET_RUN_NOISE);
    s->graph = true;
    s->bandwidth_beside = true;
    s->peak_beside = true;
}

void fc_doc_init(fc_doc *d)
{
    memset(d, 0, sizeof *d);
    d->schema_version = FC_CALIBRATION_VERSION;
    fc_strlcpy(d->tool_version, fc_version_string, sizeof d->tool_version);
    fc_strlcpy(d->git_revision, fc_git_revision, sizeof d->git_revision);
    fc_utc_timestamp(d->created);
    fc_settings_defaults(&d->settings);
}

void fc_doc_free(fc_doc *d)
{
    cJSON_Delete(d->argv);
    cJSON_Delete(d->host);
    cJSON_Delete(d->ceilings);
    cJSON_Delete(d->history);
    cJSON_Delete(d->network);
    free(d->rec);
    memset(d, 0, sizeof *d);
}

fc_record *fc_doc_add(fc_doc *d)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 32;
        d->rec = fc_xrealloc(d->rec, (size_t)d->cap * sizeof *d->rec);
    }
    fc_record *r = &d->rec[d->n++];
    memset(r, 0, sizeof *r);
    return r;
}

fc_record *fc_doc_slot_for(fc_doc *d, const fc_record *r)
{
    char ps[256];
    fc_problem_string(&r->prob, ps, sizeof ps);
    for (int i = 0; i < d->n; i++) {
        fc_record *old = &d->rec[i];
        /* only an interrupted record is replaced: the string is made for those alone */
        if (strcmp(old->stop_rule, "interrupted") || strcmp(old->backend, r->backend)) continue;
        char prev[256]; /* canonical: a string from an older fusecal may leave dims at their defaults */
        fc_problem_string(&old->prob, prev, sizeof prev);
        if (!strcmp(prev, ps)) {
            memset(old, 0, sizeof *old);
            return old;
        }
    }
    return fc_doc_add(d);
}

/* ------------------------------------------------------------------ ceilings */

/* The best rate of one of the curve's streams (the copy's, or with read the
 * read-only one's) at a footprint: at the largest point at or below it or any
 * larger one, never below `floor` (device memory's); floor alone when cold or
 * without a footprint or a curve. */
static double curve_at(const fc_ceilings *c, double footprint, bool cold, double floor, bool read)
{
    if (cold || footprint <= 0 || c->n_bw <= 0) return floor;
    int from = 0; /* the largest point at or below the footprint */
    for (int i = 0; i < c->n_bw; i++)
        if (c->bw[i].footprint_bytes <= footprint) from = i;
    double best = floor;
    for (int i = from; i < c->n_bw; i++) best = fmax(best, read ? c->bw[i].read_gbs : c->bw[i].gbs);
    return best;
}

double fc_ceilings_bandwidth_at(const fc_ceilings *c, double footprint, bool cold)
{
    return curve_at(c, footprint, cold, c->bandwidth_gbs, false);
}

double fc_ceilings_peak(const fc_ceilings *c, fc_dtype dt)
{
    if (c->gflops[dt] <= 0 && c->peak_gflops[dt] <= 0) dt = FC_FP32;
    return fmax(c->peak_gflops[dt], c->gflops[dt]);
}

double fc_ceilings_stream_at(const fc_ceilings *c, double footprint, bool cold, double read_share)
{
    double bw = fc_ceilings_bandwidth_at(c, footprint, cold);
    double rd = c->read_bandwidth_gbs > 0 ? curve_at(c, footprint, cold, c->read_bandwidth_gbs, true) : 0;
    return fc_stream_ceiling(bw, rd, read_share);
}

double fc_stream_ceiling(double gbs, double read_gbs, double read_share)
{
    return read_gbs > 0 && read_share > 0 ? fmin(gbs, read_gbs / fmin(read_share, 1)) : gbs;
}

void fc_ceilings_keep_better(fc_ceilings *kept, const fc_ceilings *now)
{
    for (int dt = 0; dt < FC_NDTYPES; dt++) {
        kept->gflops[dt] = fmax(kept->gflops[dt], now->gflops[dt]);
        kept->peak_gflops[dt] = fmax(kept->peak_gflops[dt], now->peak_gflops[dt]);
    }
    kept->bandwidth_gbs = fmax(kept->bandwidth_gbs, now->bandwidth_gbs);
    kept->read_bandwidth_gbs = fmax(kept->read_bandwidth_gbs, now->read_bandwidth_gbs);
    if (kept->n_bw == 0) {
        kept->n_bw = now->n_bw;
        memcpy(kept->bw, now->bw, sizeof kept->bw);
    } else if (now->n_bw == kept->n_bw) {
        for (int i = 0; i < kept->n_bw; i++)
            if (now->bw[i].footprint_bytes == kept->bw[i].footprint_bytes) {
                kept->bw[i].gbs = fmax(kept->bw[i].gbs, now->bw[i].gbs);
                kept->bw[i].read_gbs = fmax(kept->bw[i].read_gbs, now->bw[i].read_gbs);
            }
    }
}

/* ------------------------------------------------------------------ ceilings */

void fc_ceilings_read(const cJSON *o, fc_ceilings *c)
{
    memset(c, 0, sizeof *c);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "gflops");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(o, "peak_gflops");
    for (int t = 0; t < FC_NDTYPES; t++) {
        c->gflops[t] = fc_json_num(g, fc_dtype_name((fc_dtype)t), 0);
        c->peak_gflops[t] = fc_json_num(pk, fc_dtype_name((fc_dtype)t), 0);
    }
    c->bandwidth_gbs = fc_json_num(o, "bandwidth_gbs", 0);
    c->read_bandwidth_gbs = fc_json_num(o, "read_bandwidth_gbs", 0);
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(o, "bandwidth_by_footprint"))
    {
        if (c->n_bw >= FC_MAX_BW_POINTS) break;
        c->bw[c->n_bw++] = (fc_bw_point){fc_json_num(p, "footprint_bytes", 0), fc_json_num(p, "gbs", 0),
                                         fc_json_num(p, "read_gbs", 0)};
    }
    c->launch_us = fc_json_num(o, "launch_us", 0);
    c->graph_launch_us = fc_json_num(o, "graph_launch_us", 0);
    fc_strlcpy(c->method, fc_json_str(o, "method", ""), sizeof c->method);
    fc_strlcpy(c->measured_utc, fc_json_str(o, "measured_utc", ""), sizeof c->measured_utc);
}

/* ------------------------------------------------------------------ writer */

cJSON *fc_ceilings_json(const fc_ceilings *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *g = cJSON_AddObjectToObject(o, "gflops");
    for (int t = 0; t < FC_NDTYPES; t++)
        if (c->gflops[t] > 0) fc_json_add_num(g, fc_dtype_name((fc_dtype)t), c->gflops[t]);
    cJSON *pk = cJSON_AddObjectToObject(o, "peak_gflops");
    for (int t = 0; t < FC_NDTYPES; t++)
        if (c->peak_gflops[t] > 0) fc_json_add_num(pk, fc_dtype_name((fc_dtype)t), c->peak_gflops[t]);
    fc_json_add_num(o, "bandwidth_gbs", c->bandwidth_gbs);
    if (c->read_bandwidth_gbs > 0) fc_json_add_num(o, "read_bandwidth_gbs", c->read_bandwidth_gbs);
    if (c->n_bw > 0) {
        cJSON *curve = cJSON_AddArrayToObject(o, "bandwidth_by_footprint");
        for (int i = 0; i < c->n_bw; i++) {
            cJSON *p = cJSON_CreateObject();
            fc_json_add_num(p, "footprint_bytes", c->bw[i].footprint_bytes);
            fc_json_add_num(p, "gbs", c->bw[i].gbs);
            if (c->bw[i].read_gbs > 0) fc_json_add_num(p, "read_gbs", c->bw[i].read_gbs);
            cJSON_AddItemToArray(curve, p);
        }
    }
    if (c->launch_us > 0) fc_json_add_num(o, "launch_us", c->launch_us);
    if (c->graph_launch_us > 0) fc_json_add_num(o, "graph_launch_us", c->graph_launch_us);
    cJSON_AddStringToObject(o, "method", c->method);
    if (c->measured_utc[0]) {
        cJSON_AddStringToObject(o, "measured_utc", c->measured_utc);
        cJSON_AddBoolToObject(o, "cached", c->cached);
    }
    return o;
}

static cJSON *stats_json(const fc_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", s->n);
    fc_json_add_num(o, "median", s->median);
    fc_json_add_num(o, "mean", s->mean);
    fc_json_add_num(o, "min", s->min);
    fc_json_add_num(o, "max", s->max);
    fc_json_add_num(o, "p10", s->p10);
    fc_json_add_num(o, "p90", s->p90);
    fc_json_add_num(o, "stdev", s->stdev);
    fc_json_add_num(o, "rsd", s->rsd);
    return o;
}

static cJSON *ratio_json(const fc_ratio_ci *c, const char *method)
{
    cJSON *o = cJSON_CreateObject();
    fc_json_add_num(o, "ratio", c->ratio);
    cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
    cJSON_AddItemToArray(ci, fc_json_num_item(c->lo));
    cJSON_AddItemToArray(ci, fc_json_num_item(c->hi));
    if (c->rerun_hi > 0) {
        cJSON *rr = cJSON_AddArrayToObject(o, "rerun95");
        cJSON_AddItemToArray(rr, fc_json_num_item(c->rerun_lo));
        cJSON_AddItemToArray(rr, fc_json_num_item(c->rerun_hi));
    }
    if (c->within_hi > 0 && (c->within_lo != c->lo || c->within_hi != c->hi)) {
        cJSON *w = cJSON_AddArrayToObject(o, "rounds95");
        cJSON_AddItemToArray(w, fc_json_num_item(c->within_lo));
        cJSON_AddItemToArray(w, fc_json_num_item(c->within_hi));
    }
    if (method) cJSON_AddStringToObject(o, "method", method);
    return o;
}

static cJSON *rounds_json(const fc_record *r)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < r->rounds && k < FC_MAX_ROUNDS; k++) {
        const fc_round_rec *rr = &r->round[k];
        cJSON *o = cJSON_CreateObject();
        int nv = r->has_control ? FC_MAX_VARIANTS : FC_NVARIANTS;
        cJSON *med = cJSON_AddObjectToObject(o, "median_ms"), *batch = cJSON_AddObjectToObject(o, "batch");
        for (int v = 0; v < nv; v++) {
            fc_json_add_num(med, fc_variant_name((fc_variant)v), rr->median_ms[v]);
            cJSON_AddNumberToObject(batch, fc_variant_name((fc_variant)v), rr->batch[v]);
        }
        fc_json_add_num(o, "ratio", rr->ratio);
        if (r->has_graph_speedup) fc_json_add_num(o, "ratio_graph", rr->ratio_graph);
        if (r->has_control) fc_json_add_num(o, "ratio_fusion", rr->ratio_fusion);
        cJSON_AddNumberToObject(o, "pairs", rr->pairs);
        if (rr->beside_gbs[FC_FUSED] > 0) {
            cJSON *bs = cJSON_AddObjectToObject(o, "bandwidth_beside_gbs");
            for (int v = 0; v < nv; v++) fc_json_add_num(bs, fc_variant_name((fc_variant)v), rr->beside_gbs[v]);
        }
        if (rr->beside_gflops > 0) fc_json_add_num(o, "peak_beside_gflops", rr->beside_gflops);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *state_json(const fc_state *st)
{
    cJSON *o = cJSON_CreateObject();
    fc_json_add_num(o, "span", st->span);
    cJSON_AddStringToObject(o, "span_variant", fc_variant_name((fc_variant)st->span_variant));
    cJSON_AddNumberToObject(o, "rounds_against", st->rounds_against);
    if (st->withheld) cJSON_AddStringToObject(o, "withheld", fc_decision_name(st->said));
    return o;
}

static void state_read(const cJSON *o, fc_decision decision, fc_state *st)
{
    memset(st, 0, sizeof *st);
    if (!cJSON_IsObject(o)) return;
    st->made = true;
    st->span = fc_json_num(o, "span", 0);
    const int sv = fc_word_index(&fc_variant_words, fc_json_str(o, "span_variant", "unfused"));
    st->span_variant = sv < 0 ? FC_UNFUSED : sv;
    st->rounds_against = fc_json_int(o, "rounds_against", 0);
    /* the interval's decision: the one withheld (the schema allows yes or no), else the record's own */
    const int w = fc_word_index(&fc_decision_words, fc_json_str(o, "withheld", ""));
    st->withheld = w >= 0;
    st->said = w >= 0 ? (fc_decision)w : decision;
}

static cJSON *check_json(const fc_check *c, bool stable)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "passed", c->passed);
    cJSON_AddBoolToObject(o, "trusted", c->trusted);
    fc_json_add_num(o, "rel_err", c->rel_err);
    fc_json_add_num(o, "max_abs_err", c->max_abs_err);
    cJSON_AddNumberToObject(o, "nonfinite", (double)c->nonfinite);
    fc_json_add_num(o, "zero_fraction", c->zero_frac);
    cJSON_AddBoolToObject(o, "stable_after_timing", stable);
    if (c->reason[0]) cJSON_AddStringToObject(o, "reason", c->reason);
    return o;
}

static cJSON *sense_json(const fc_sense *s)
{
    cJSON *o = cJSON_CreateObject();
    if (s->clock_mhz > 0) fc_json_add_num(o, "clock_mhz", s->clock_mhz);
    if (s->mem_clock_mhz > 0) fc_json_add_num(o, "mem_clock_mhz", s->mem_clock_mhz);
    if (s->temperature_c > 0) fc_json_add_num(o, "temperature_c", s->temperature_c);
    fc_json_add_num(o, "loadavg1", s->loadavg1);
    cJSON_AddNumberToObject(o, "fusecal_runs", s->fusecal_runs);
    return o;
}

static cJSON *variant_json(const fc_record *r, fc_variant vi)
{
    const fc_variant_rec *v = &r->v[vi];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "impl", v->impl.name);
    cJSON_AddNumberToObject(o, "kernels", v->impl.nkernels);
    if (v->impl.nreorders > 0) cJSON_AddNumberToObject(o, "layout_reorders", v->impl.nreorders);
    cJSON_AddBoolToObject(o, "fallback", v->impl.fallback);
    if (v->impl.fallback) cJSON_AddStringToObject(o, "fallback_reason", v->impl.fallback_why);
    if (v->impl.kernel[0]) cJSON_AddStringToObject(o, "attention_kernel", v->impl.kernel);
    if (v->impl.flops_performed > 0) fc_json_add_num(o, "flops_performed", v->impl.flops_performed);
    fc_json_add_num(o, "streamed_bytes", fmax(v->impl.streamed_bytes, 0));
    fc_json_add_num(o, "bytes", v->bytes);
    fc_json_add_num(o, "peak_intermediate_bytes", v->peak_inter_bytes);
    if (v->footprint_bytes > 0) fc_json_add_num(o, "footprint_bytes", v->footprint_bytes);
    if (v->ceil_gbs > 0) fc_json_add_num(o, "bandwidth_ceiling_gbs", v->ceil_gbs);
    if (v->read_bytes > 0) fc_json_add_num(o, "read_bytes", v->read_bytes);
    if (v->beside_gbs > 0) fc_json_add_num(o, "bandwidth_beside_gbs", v->beside_gbs);
    fc_json_add_num(o, "intensity_flop_per_byte", v->intensity);
    cJSON_AddStringToObject(o, "bound", v->bound);
    if (r->status == FC_STATUS_OK) {
        cJSON_AddItemToObject(o, "latency_ms", stats_json(&v->lat));
        if (v->has_graph) cJSON_AddItemToObject(o, "latency_graph_ms", stats_json(&v->lat_graph));
        cJSON_AddNumberToObject(o, "batch", v->batch);
        cJSON_AddStringToObject(o, "stop_rule", v->stop_rule);
        cJSON_AddNumberToObject(o, "samples_at_stop", v->samples_at_stop);
        fc_json_add_num(o, "sampled_s", v->sampled_s);
        fc_json_add_num(o, "gflops", v->gflops);
        fc_json_add_num(o, "gbs", v->gbs);
        fc_json_add_num(o, "pct_peak_flops", v->pct_peak_flops);
        fc_json_add_num(o, "pct_gemm", v->pct_gemm);
        fc_json_add_num(o, "pct_peak_bandwidth", v->pct_peak_bw);
        if (v->beside_gbs > 0) fc_json_add_num(o, "pct_bandwidth_beside", v->pct_bw_beside);
        if (r->peak_beside_gflops > 0) fc_json_add_num(o, "pct_peak_flops_beside", v->pct_peak_beside);
        fc_json_add_num(o, "pct_roofline", v->pct_roofline);
        cJSON_AddBoolToObject(o, "over_ceiling", v->over_ceiling);
    }
    if (v->check.checked > 0) cJSON_AddItemToObject(o, "verification", check_json(&v->check, v->stable));
    return o;
}

cJSON *fc_record_to_json(const fc_record *r)
{
    const fc_family *fam = fc_family_of(r->prob.pat);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pattern", r->prob.pat->name);
    cJSON_AddStringToObject(o, "family", fam->name);
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddStringToObject(o, "dtype", fc_dtype_name(r->prob.dtype));
    cJSON_AddStringToObject(o, "layout", fc_layout_name(r->prob.layout));
    cJSON *dims = cJSON_AddObjectToObject(o, "dims");
    for (int i = 0; i < fam->ndims; i++) cJSON_AddNumberToObject(dims, fam->dims[i].name, (double)r->prob.d[i]);
    cJSON_AddStringToObject(o, "problem", r->problem);
    cJSON_AddStringToObject(o, "status", fc_status_name(r->status));
    if (r->reason[0]) cJSON_AddStringToObject(o, "reason", r->reason);
    fc_json_add_num(o, "threshold", r->threshold);
    cJSON_AddStringToObject(o, "decision", r->status == FC_STATUS_OK ? fc_decision_name(r->decision) : "none");
    fc_json_add_num(o, "flops", r->flops);
    if (r->flops_padded > 0) fc_json_add_num(o, "flops_padded", r->flops_padded);
    if (r->status == FC_STATUS_OK) {
        /* the flat fields an existing partitioner reads */
        cJSON_AddStringToObject(o, "fusion_pattern", r->prob.pat->name);
        fc_json_add_num(o, "unfused_latency_ms", r->v[FC_UNFUSED].lat.median);
        fc_json_add_num(o, "fused_latency_ms", r->v[FC_FUSED].lat.median);
        fc_json_add_num(o, "speedup_factor", r->speedup.ratio);
        fc_json_add_num(o, "memory_reduction", r->traffic_reduction);
        fc_json_add_num(o, "unfused_gflops", r->v[FC_UNFUSED].gflops);
        fc_json_add_num(o, "fused_gflops", r->v[FC_FUSED].gflops);
        cJSON_AddItemToObject(o, "speedup", ratio_json(&r->speedup, r->interval_method));
        fc_json_add_num(o, "margin", r->margin);
        cJSON_AddStringToObject(o, "decided_by", fc_word_name(&fc_decider_words, r->decided_by));
        if (r->has_control) {
            cJSON *split = cJSON_AddObjectToObject(o, "speedup_split");
            cJSON_AddItemToObject(split, "implementation", ratio_json(&r->split_implementation, NULL));
            cJSON_AddItemToObject(split, "fusion", ratio_json(&r->split_fusion, NULL));
        }
        cJSON_AddNumberToObject(o, "rounds", r->rounds);
        cJSON_AddStringToObject(o, "stop_rule", r->stop_rule);
        cJSON_AddItemToObject(o, "per_round", rounds_json(r));
        if (r->state.made) cJSON_AddItemToObject(o, "state", state_json(&r->state));
        if (r->has_graph_speedup) {
            cJSON_AddItemToObject(o, "speedup_graph", ratio_json(&r->speedup_graph, r->interval_method));
            fc_json_add_num(o, "launch_overhead_saved_ms",
                            (r->v[FC_UNFUSED].lat.median - r->v[FC_UNFUSED].lat_graph.median) -
                                (r->v[FC_FUSED].lat.median - r->v[FC_FUSED].lat_graph.median));
            fc_json_add_num(o, "kernel_time_saved_ms",
                            r->v[FC_UNFUSED].lat_graph.median - r->v[FC_FUSED].lat_graph.median);
        }
    }
    cJSON *mem = cJSON_AddObjectToObject(o, "memory");
    fc_json_add_num(mem, "bytes_unfused", r->v[FC_UNFUSED].bytes);
    fc_json_add_num(mem, "bytes_fused", r->v[FC_FUSED].bytes);
    fc_json_add_num(mem, "traffic_reduction", r->traffic_reduction);
    fc_json_add_num(mem, "peak_intermediate_bytes_unfused", r->v[FC_UNFUSED].peak_inter_bytes);
    fc_json_add_num(mem, "peak_intermediate_bytes_fused", r->v[FC_FUSED].peak_inter_bytes);
    cJSON *roof = cJSON_AddObjectToObject(o, "roofline");
    fc_json_add_num(roof, "ceiling_gflops", r->ceil_gflops);
    fc_json_add_num(roof, "peak_gflops", r->peak_gflops);
    if (r->peak_beside_gflops > 0) fc_json_add_num(roof, "peak_beside_gflops", r->peak_beside_gflops);
    fc_json_add_num(roof, "ceiling_gbs", r->ceil_gbs);
    fc_json_add_num(roof, "machine_balance_flop_per_byte", r->ceil_gbs > 0 ? r->peak_gflops / r->ceil_gbs : 0);
    cJSON *ver = cJSON_AddObjectToObject(o, "verification");
    cJSON_AddBoolToObject(ver, "passed", r->verified);
    cJSON_AddStringToObject(ver, "reference", "float64");
    double tol = r->v[FC_UNFUSED].check.tol;
    fc_json_add_num(ver, "tolerance", tol > 0 ? tol : fc_problem_tolerance(&r->prob));
    cJSON_AddNumberToObject(ver, "checked", (double)r->v[FC_UNFUSED].check.checked);
    cJSON_AddBoolToObject(ver, "sampled", r->v[FC_UNFUSED].check.sampled);
    fc_json_add_num(ver, "fused_vs_unfused_rel_diff", r->fused_vs_unfused);
    fc_json_add_num(ver, "reference_ms", r->reference_ms);
    cJSON *vars = cJSON_AddObjectToObject(o, "variants");
    for (int v = 0; v < (r->has_control ? FC_MAX_VARIANTS : FC_NVARIANTS); v++)
        cJSON_AddItemToObject(vars, fc_variant_name((fc_variant)v), variant_json(r, (fc_variant)v));
    fc_json_add_num(o, "prepare_ms", r->prepare_ms);
    fc_json_add_num(o, "setup_ms", r->setup_ms);
    cJSON *env = cJSON_AddObjectToObject(o, "environment");
    cJSON_AddItemToObject(env, "before", sense_json(&r->before));
    cJSON_AddItemToObject(env, "after", sense_json(&r->after));
    cJSON_AddBoolToObject(env, "throttled", r->throttled);
    cJSON_AddBoolToObject(env, "contended", r->contended);
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
    cJSON_AddStringToObject(o, "seed", seed);
    return o;
}

static cJSON *settings_json(const fc_settings *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "sweep", s->sweep);
    cJSON_AddStringToObject(o, "cache", s->cold ? "cold" : "warm");
    cJSON_AddNumberToObject(o, "threads", s->threads);
    if (s->threshold > 0) fc_json_add_num(o, "threshold", s->threshold);
    else
        cJSON_AddStringToObject(o, "threshold", "catalogue");
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)s->seed);
    cJSON_AddStringToObject(o, "seed", seed);
    cJSON *st = cJSON_AddObjectToObject(o, "stop");
    cJSON_AddNumberToObject(st, "min_samples", s->stop.min_samples);
    fc_json_add_num(st, "min_time_s", s->stop.min_time);
    fc_json_add_num(st, "max_noise", s->stop.max_noise);
    fc_json_add_num(st, "max_time_s", s->stop.max_time);
    cJSON_AddNumberToObject(st, "max_samples", s->stop.max_samples);
    fc_json_add_num(o, "target_sample_s", s->target_sample);
    cJSON_AddBoolToObject(o, "graph", s->graph);
    cJSON_AddBoolToObject(o, "bandwidth_beside", s->bandwidth_beside);
    cJSON_AddBoolToObject(o, "peak_beside", s->peak_beside);
    cJSON_AddStringToObject(o, "attention_kernel", fc_word_name(&fc_attn_kernel_words, s->attn_kernel));
    cJSON_AddNumberToObject(o, "rounds", s->rounds);
    fc_json_add_num(o, "max_time_total_s", s->max_time_total);
    fc_json_add_num(o, "max_memory_bytes", s->max_memory);
    fc_json_add_num(o, "run_noise", s->run_noise);
    return o;
}

char *fc_doc_to_json(const fc_doc *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schema", fc_kinds[FC_KIND_calibration].tag);
    cJSON_AddNumberToObject(o, "schema_version", d->schema_version);
    cJSON *tool = cJSON_AddObjectToObject(o, "tool");
    cJSON_AddStringToObject(tool, "name", "fusecal");
    cJSON_AddStringToObject(tool, "version", d->tool_version);
    cJSON_AddStringToObject(tool, "git_revision", d->git_revision);
    cJSON_AddStringToObject(o, "created_utc", d->created);
    cJSON_AddBoolToObject(o, "complete", d->complete);
    fc_json_add_num(o, "elapsed_s", d->elapsed_s);
    cJSON_AddItemToObject(o, "argv", d->argv ? cJSON_Duplicate(d->argv, 1) : cJSON_CreateArray());
    cJSON_AddItemToObject(o, "host", d->host ? cJSON_Duplicate(d->host, 1) : cJSON_CreateObject());
    cJSON_AddItemToObject(o, "ceilings", d->ceilings ? cJSON_Duplicate(d->ceilings, 1) : cJSON_CreateObject());
    cJSON_AddItemToObject(o, "settings", settings_json(&d->settings));
    if (d->history) cJSON_AddItemToObject(o, "history", cJSON_Duplicate(d->history, 1));
    int counts[3] = {0, 0, 0}, dec[3] = {0, 0, 0}, fallbacks = 0, untrusted = 0, over = 0;
    cJSON *recs = cJSON_AddArrayToObject(o, "records");
    for (int i = 0; i < d->n; i++) {
        const fc_record *r = &d->rec[i];
        counts[r->status]++;
        if (r->status == FC_STATUS_OK) dec[r->decision]++;
        for (int v = 0; v < FC_NVARIANTS; v++) {
            fallbacks += r->v[v].impl.fallback;
            untrusted += r->status == FC_STATUS_OK && !r->v[v].check.trusted;
            over += r->status == FC_STATUS_OK && r->v[v].over_ceiling;
        }
        cJSON_AddItemToArray(recs, fc_record_to_json(r));
    }
    cJSON *sum = cJSON_AddObjectToObject(o, "summary");
    cJSON_AddNumberToObject(sum, "records", d->n);
    cJSON_AddNumberToObject(sum, "ok", counts[FC_STATUS_OK]);
    cJSON_AddNumberToObject(sum, "failed", counts[FC_STATUS_FAILED]);
    cJSON_AddNumberToObject(sum, "skipped", counts[FC_STATUS_SKIPPED]);
    cJSON_AddNumberToObject(sum, "fuse_yes", dec[FC_DECIDE_YES]);
    cJSON_AddNumberToObject(sum, "fuse_no", dec[FC_DECIDE_NO]);
    cJSON_AddNumberToObject(sum, "inconclusive", dec[FC_DECIDE_INCONCLUSIVE]);
    cJSON_AddNumberToObject(sum, "fallback_variants", fallbacks);
    cJSON_AddNumberToObject(sum, "untrusted_variants", untrusted);
    cJSON_AddNumberToObject(sum, "over_ceiling_variants", over);
    if (d->network) cJSON_AddItemToObject(o, "network", cJSON_Duplicate(d->network, 1));
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}

/* ------------------------------------------------------------------ reader */

static void stats_read(const cJSON *o, fc_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = fc_json_int(o, "n", 0);
    s->median = fc_json_num(o, "median", NAN);
    s->mean = fc_json_num(o, "mean", NAN);
    s->min = fc_json_num(o, "min", NAN);
    s->max = fc_json_num(o, "max", NAN);
    s->p10 = fc_json_num(o, "p10", NAN);
    s->p90 = fc_json_num(o, "p90", NAN);
    s->stdev = fc_json_num(o, "stdev", NAN);
    s->rsd = fc_json_num(o, "rsd", NAN);
}

/* Reads a ratio and its intervals; false when the ci95 is upside down (lo > hi),
 * which would judge against bounds swapped. */
static bool ratio_read(const cJSON *o, fc_ratio_ci *c)
{
    memset(c, 0, sizeof *c);
    c->ratio = fc_json_num(o, "ratio", NAN);
    const cJSON *ci = cJSON_GetObjectItemCaseSensitive(o, "ci95");
    c->lo = cJSON_IsNumber(cJSON_GetArrayItem(ci, 0)) ? cJSON_GetArrayItem(ci, 0)->valuedouble : NAN;
    c->hi = cJSON_IsNumber(cJSON_GetArrayItem(ci, 1)) ? cJSON_GetArrayItem(ci, 1)->valuedouble : NAN;
    const cJSON *rr = cJSON_GetObjectItemCaseSensitive(o, "rerun95");
    if (cJSON_GetArraySize(rr) == 2) {
        c->rerun_lo = cJSON_GetArrayItem(rr, 0)->valuedouble;
        c->rerun_hi = cJSON_GetArrayItem(rr, 1)->valuedouble;
    }
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "rounds95");
    if (cJSON_GetArraySize(w) == 2) {
        c->within_lo = cJSON_GetArrayItem(w, 0)->valuedouble;
        c->within_hi = cJSON_GetArrayItem(w, 1)->valuedouble;
    } else {
        c->within_lo = c->lo;
        c->within_hi = c->hi;
    }
    return !(c->lo > c->hi);
}

static void sense_read(const cJSON *o, fc_sense *s)
{
    s->clock_mhz = fc_json_num(o, "clock_mhz", 0);
    s->mem_clock_mhz = fc_json_num(o, "mem_clock_mhz", 0);
    s->temperature_c = fc_json_num(o, "temperature_c", 0);
    s->loadavg1 = fc_json_num(o, "loadavg1", 0);
    s->fusecal_runs = fc_json_int(o, "fusecal_runs", 0);
}

static int record_read(const char *name, int idx, const cJSON *o, fc_record *r, fc_err *e)
{
    fc_err pe;
    const char *problem = fc_json_str(o, "problem", "");
    if (fc_problem_parse(problem, NULL, &r->prob, &pe) != 0)
        return fc_errf(e, "%s: record %d: bad problem string: %s", name, idx, pe.msg);
    if (strcmp(r->prob.pat->name, fc_json_str(o, "pattern", "")) != 0 ||
        strcmp(fc_dtype_name(r->prob.dtype), fc_json_str(o, "dtype", "")) != 0)
        return fc_errf(e, "%s: record %d: pattern or dtype disagrees with its problem string '%s'", name, idx, problem);
    fc_strlcpy(r->problem, problem, sizeof r->problem);
    fc_strlcpy(r->device, fc_json_str(o, "device", ""), sizeof r->device);
    fc_strlcpy(r->backend, fc_json_str(o, "backend", ""), sizeof r->backend);
    const char *st = fc_json_str(o, "status", "failed");
    r->status = !strcmp(st, "ok") ? FC_STATUS_OK : !strcmp(st, "skipped") ? FC_STATUS_SKIPPED : FC_STATUS_FAILED;
    fc_strlcpy(r->reason, fc_json_str(o, "reason", ""), sizeof r->reason);
    r->threshold = fc_json_num(o, "threshold", 0);
    const char *dec = fc_json_str(o, "decision", "none");
    r->decision = !strcmp(dec, "yes") ? FC_DECIDE_YES : !strcmp(dec, "no") ? FC_DECIDE_NO : FC_DECIDE_INCONCLUSIVE;
    r->flops = fc_json_num(o, "flops", 0);
    r->flops_padded = fc_json_num(o, "flops_padded", 0);
    r->rounds = fc_json_int(o, "rounds", 1);
    fc_strlcpy(r->stop_rule, fc_json_str(o, "stop_rule", ""), sizeof r->stop_rule);
    r->margin = fc_json_num(o, "margin", NAN);
    const int by = fc_word_index(&fc_decider_words, fc_json_str(o, "decided_by", "eager"));
    r->decided_by = by < 0 ? FC_DECIDER_EAGER : (fc_decider)by;
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "speedup");
    const char *upside = NULL; /* the interval whose low end is above its high end */
    if (sp && !ratio_read(sp, &r->speedup)) upside = "speedup";
    fc_strlcpy(r->interval_method, fc_json_str(sp, "method", ""), sizeof r->interval_method);
    const cJSON *split = cJSON_GetObjectItemCaseSensitive(o, "speedup_split");
    if (split) {
        if (!ratio_read(cJSON_GetObjectItemCaseSensitive(split, "implementation"), &r->split_implementation) && !upside)
            upside = "speedup_split.implementation";
        if (!ratio_read(cJSON_GetObjectItemCaseSensitive(split, "fusion"), &r->split_fusion) && !upside)
            upside = "speedup_split.fusion";
    }
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(o, "per_round");
    int k = 0;
    for (const cJSON *ro = pr ? pr->child : NULL; ro && k < FC_MAX_ROUNDS; ro = ro->next, k++) {
        fc_round_rec *rr = &r->round[k];
        const cJSON *med = cJSON_GetObjectItemCaseSensitive(ro, "median_ms"),
                    *batch = cJSON_GetObjectItemCaseSensitive(ro, "batch");
        for (int v = 0; v < FC_MAX_VARIANTS; v++) {
            rr->median_ms[v] = fc_json_num(med, fc_variant_name((fc_variant)v), 0);
            rr->batch[v] = fc_json_int(batch, fc_variant_name((fc_variant)v), 0);
        }
        rr->ratio = fc_json_num(ro, "ratio", NAN);
        rr->ratio_graph = fc_json_num(ro, "ratio_graph", 0);
        rr->ratio_fusion = fc_json_num(ro, "ratio_fusion", 0);
        rr->pairs = fc_json_int(ro, "pairs", 0);
        const cJSON *bs = cJSON_GetObjectItemCaseSensitive(ro, "bandwidth_beside_gbs");
        for (int v = 0; v < FC_MAX_VARIANTS; v++)
            rr->beside_gbs[v] = fc_json_num(bs, fc_variant_name((fc_variant)v), 0);
        rr->beside_gflops = fc_json_num(ro, "peak_beside_gflops", 0);
    }
    if (pr && (k != r->rounds || cJSON_GetArraySize(pr) != k))
        return fc_errf(e, "%s: record %d: rounds is %d but per_round holds %d", name, idx, r->rounds,
                       cJSON_GetArraySize(pr));
    state_read(cJSON_GetObjectItemCaseSensitive(o, "state"), r->decision, &r->state);
    const cJSON *spg = cJSON_GetObjectItemCaseSensitive(o, "speedup_graph");
    r->has_graph_speedup = spg != NULL;
    if (spg && !ratio_read(spg, &r->speedup_graph) && !upside) upside = "speedup_graph";
    if (upside)
        return fc_errf(e, "%s: record %d (%s on %s): %s.ci95 has its low end above its high end", name, idx, problem,
                       r->backend, upside);
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(o, "memory");
    r->traffic_reduction = fc_json_num(mem, "traffic_reduction", 0);
    const cJSON *roof = cJSON_GetObjectItemCaseSensitive(o, "roofline");
    r->ceil_gflops = fc_json_num(roof, "ceiling_gflops", 0);
    r->ceil_gbs = fc_json_num(roof, "ceiling_gbs", 0);
    r->peak_gflops = fc_json_num(roof, "peak_gflops", r->ceil_gflops);
    r->peak_beside_gflops = fc_json_num(roof, "peak_beside_gflops", 0);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "verification");
    r->verified = fc_json_bool(ver, "passed", false);
    r->fused_vs_unfused = fc_json_num(ver, "fused_vs_unfused_rel_diff", NAN);
    r->reference_ms = fc_json_num(ver, "reference_ms", 0);
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(o, "variants");
    r->has_control = cJSON_GetObjectItemCaseSensitive(vars, fc_variant_name(FC_CONTROL)) != NULL;
    for (int v = 0; v < (r->has_control ? FC_MAX_VARIANTS : FC_NVARIANTS); v++) {
        const cJSON *vo = cJSON_GetObjectItemCaseSensitive(vars, fc_variant_name((fc_variant)v));
        fc_variant_rec *vr = &r->v[v];
        fc_strlcpy(vr->impl.name, fc_json_str(vo, "impl", ""), sizeof vr->impl.name);
        vr->impl.nkernels = fc_json_int(vo, "kernels", 0);
        vr->impl.nreorders = fc_json_int(vo, "layout_reorders", 0);
        vr->impl.fallback = fc_json_bool(vo, "fallback", false);
        fc_strlcpy(vr->impl.fallback_why, fc_json_str(vo, "fallback_reason", ""), sizeof vr->impl.fallback_why);
        fc_strlcpy(vr->impl.kernel, fc_json_str(vo, "attention_kernel", ""), sizeof vr->impl.kernel);
        vr->impl.flops_performed = fc_json_num(vo, "flops_performed", 0);
        vr->impl.streamed_bytes = fc_json_num(vo, "streamed_bytes", -1);
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(vo, "latency_ms");
        if (lat) stats_read(lat, &vr->lat);
        const cJSON *latg = cJSON_GetObjectItemCaseSensitive(vo, "latency_graph_ms");
        vr->has_graph = latg != NULL;
        if (latg) stats_read(latg, &vr->lat_graph);
        vr->batch = fc_json_int(vo, "batch", 0);
        fc_strlcpy(vr->stop_rule, fc_json_str(vo, "stop_rule", ""), sizeof vr->stop_rule);
        vr->samples_at_stop = fc_json_int(vo, "samples_at_stop", 0);
        vr->sampled_s = fc_json_num(vo, "sampled_s", 0);
        vr->gflops = fc_json_num(vo, "gflops", 0);
        vr->bytes = fc_json_num(vo, "bytes", 0);
        vr->footprint_bytes = fc_json_num(vo, "footprint_bytes", 0);
        vr->read_bytes = fc_json_num(vo, "read_bytes", 0);
        vr->ceil_gbs = fc_json_num(vo, "bandwidth_ceiling_gbs", r->ceil_gbs); /* before the curve: the record's */
        vr->gbs = fc_json_num(vo, "gbs", 0);
        vr->pct_peak_flops = fc_json_num(vo, "pct_peak_flops", 0);
        /* before the arithmetic peak, pct_peak_flops was of the GEMM rate */
        vr->pct_gemm = fc_json_num(vo, "pct_gemm", cJSON_HasObjectItem(roof, "peak_gflops") ? 0 : vr->pct_peak_flops);
        vr->pct_peak_bw = fc_json_num(vo, "pct_peak_bandwidth", 0);
        vr->beside_gbs = fc_json_num(vo, "bandwidth_beside_gbs", 0);
        vr->pct_bw_beside = fc_json_num(vo, "pct_bandwidth_beside", 0);
        vr->pct_peak_beside = fc_json_num(vo, "pct_peak_flops_beside", 0);
        vr->pct_roofline = fc_json_num(vo, "pct_roofline", 0);
        vr->over_ceiling = fc_json_bool(vo, "over_ceiling", false);
        vr->intensity = fc_json_num(vo, "intensity_flop_per_byte", 0);
        fc_strlcpy(vr->bound, fc_json_str(vo, "bound", ""), sizeof vr->bound);
        vr->peak_inter_bytes = fc_json_num(vo, "peak_intermediate_bytes", 0);
        const cJSON *vv = cJSON_GetObjectItemCaseSensitive(vo, "verification");
        if (vv) {
            vr->check.passed = fc_json_bool(vv, "passed", false);
            vr->check.trusted = fc_json_bool(vv, "trusted", false);
            vr->check.rel_err = fc_json_num(vv, "rel_err", NAN);
            vr->check.max_abs_err = fc_json_num(vv, "max_abs_err", NAN);
            vr->check.nonfinite = fc_json_count(vv, "nonfinite", 0);
            vr->check.zero_frac = fc_json_num(vv, "zero_fraction", 0);
            vr->check.tol = fc_json_num(ver, "tolerance", 0);
            vr->check.checked = fc_json_count(ver, "checked", 0);
            vr->check.sampled = fc_json_bool(ver, "sampled", false);
            fc_strlcpy(vr->check.reason, fc_json_str(vv, "reason", ""), sizeof vr->check.reason);
            vr->stable = fc_json_bool(vv, "stable_after_timing", false);
        }
    }
    r->prepare_ms = fc_json_num(o, "prepare_ms", 0);
    r->setup_ms = fc_json_num(o, "setup_ms", 0);
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "environment");
    sense_read(cJSON_GetObjectItemCaseSensitive(env, "before"), &r->before);
    sense_read(cJSON_GetObjectItemCaseSensitive(env, "after"), &r->after);
    r->throttled = fc_json_bool(env, "throttled", false);
    r->contended = fc_json_bool(env, "contended", false);
    r->seed = strtoull(fc_json_str(o, "seed", "0"), NULL, 10);
    return 0;
}

static void settings_read(const cJSON *o, fc_settings *s)
{
    fc_settings_defaults(s);
    fc_strlcpy(s->sweep, fc_json_str(o, "sweep", "custom"), sizeof s->sweep);
    s->cold = !strcmp(fc_json_str(o, "cache", "warm"), "cold");
    s->threads = fc_setting_read_int(o, FC_SET_THREADS, 0);
    s->threshold = fc_json_num(o, "threshold", 0);
    s->seed = strtoull(fc_json_str(o, "seed", "0"), NULL, 10);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "stop");
    s->stop.min_samples = fc_setting_read_int(st, FC_SET_MIN_SAMPLES, s->stop.min_samples);
    s->stop.min_time = fc_json_num(st, "min_time_s", s->stop.min_time);
    s->stop.max_noise = fc_json_num(st, "max_noise", s->stop.max_noise);
    s->stop.max_time = fc_json_num(st, "max_time_s", s->stop.max_time);
    s->stop.max_samples = fc_setting_read_int(st, FC_SET_MAX_SAMPLES, s->stop.max_samples);
    s->target_sample = fc_json_num(o, "target_sample_s", s->target_sample);
    s->graph = fc_json_bool(o, "graph", s->graph);
    s->bandwidth_beside = fc_json_bool(o, "bandwidth_beside", false); /* absent: written before it */
    s->peak_beside = fc_json_bool(o, "peak_beside", false);
    int ak = fc_word_index(&fc_attn_kernel_words, fc_json_str(o, "attention_kernel", "reference"));
    s->attn_kernel = ak < 0 ? FC_ATTN_REFERENCE : (fc_attn_kernel)ak;
    s->rounds = fc_setting_read_int(o, FC_SET_ROUNDS, s->rounds);
    s->max_time_total = fc_json_num(o, "max_time_total_s", 0);
    s->max_memory = fc_json_num(o, "max_memory_bytes", 0);
    /* absent: a document from before the run-level component, whose intervals are the rounds' alone */
    s->run_noise = fc_json_num(o, "run_noise", 0);
    if (!fc_setting_in_range(FC_SET_RUN_NOISE, s->run_noise)) s->run_noise = 0;
}

int fc_doc_parse(const char *name, const char *text, fc_doc *d, fc_err *e)
{
    cJSON *root = NULL;
    fc_doc_init(d);
    if (fc_json_parse(name, text, strlen(text), &root, e) != 0) return -1;
    return fc_doc_from_json(name, root, d, e);
}

int fc_doc_from_json(const char *name, cJSON *root, fc_doc *d, fc_err *e)
{
    fc_doc_init(d);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fc_errf(e, "%s: not a calibration document (expected a JSON object)", name);
    }
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (!cJSON_IsNumber(sv) || fc_kind_detect(root) != &fc_kinds[FC_KIND_calibration]) {
        cJSON_Delete(root);
        return fc_errf(e, "%s: not a fusecal calibration document (no schema/schema_version)", name);
    }
    const double version = sv->valuedouble; /* sv dies with root */
    if (version > FC_CALIBRATION_VERSION) {
        cJSON_Delete(root);
        return fc_errf(e, "%s: schema version %g is newer than this fusecal reads (%d); upgrade fusecal", name, version,
                       FC_CALIBRATION_VERSION);
    }
    if (version != FC_CALIBRATION_VERSION) {
        cJSON_Delete(root);
        return fc_errf(e, "%s: schema version %g is not supported (this fusecal reads %d)", name, version,
                       FC_CALIBRATION_VERSION);
    }
    if (fc_schema_check(CALIBRATION_SCHEMA, root, name, e) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    d->schema_version = (int)version;
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(root, "tool");
    fc_strlcpy(d->tool_version, fc_json_str(tool, "version", ""), sizeof d->tool_version);
    fc_strlcpy(d->git_revision, fc_json_str(tool, "git_revision", ""), sizeof d->git_revision);
    fc_strlcpy(d->created, fc_json_str(root, "created_utc", ""), sizeof d->created);
    d->complete = fc_json_bool(root, "complete", false);
    d->elapsed_s = fc_json_num(root, "elapsed_s", 0);
    d->argv = cJSON_DetachItemFromObjectCaseSensitive(root, "argv");
    d->host = cJSON_DetachItemFromObjectCaseSensitive(root, "host");
    d->ceilings = cJSON_DetachItemFromObjectCaseSensitive(root, "ceilings");
    d->history = cJSON_DetachItemFromObjectCaseSensitive(root, "history");
    d->network = cJSON_DetachItemFromObjectCaseSensitive(root, "network");
    settings_read(cJSON_GetObjectItemCaseSensitive(root, "settings"), &d->settings);
    const cJSON *recs = cJSON_GetObjectItemCaseSensitive(root, "records");
    int i = 0;
    for (const cJSON *r = recs ? recs->child : NULL; r; r = r->next, i++)
        if (record_read(name, i, r, fc_doc_add(d), e) != 0) {
            cJSON_Delete(root);
            fc_doc_free(d);
            return -1;
        }
    cJSON_Delete(root);
    return 0;
}

int fc_doc_load(const char *path, fc_doc *d, fc_err *e)
{
    char *text;
    size_t len;
    fc_doc_init(d);
    if (fc_read_file(path, FC_JSON_MAX_BYTES, &text, &len, e) != 0) return -1;
    if (strlen(text) != len) {
        free(text);
        return fc_errf(e, "%s: contains a NUL byte, not JSON text", path);
    }
    int rc = fc_doc_parse(path, text, d, e);
    free(text);
    return rc;
}

bool fc_settings_compatible(const fc_settings *a, const fc_settings *b, char *why, size_t n)
{
    if (a->cold != b->cold) {
        snprintf(why, n, "cache mode differs (%s vs %s)", a->cold ? "cold" : "warm", b->cold ? "cold" : "warm");
        return false;
    }
    if (a->threads != b->threads) {
        snprintf(why, n, "thread count differs (%d vs %d)", a->threads, b->threads);
        return false;
    }
    if (a->stop.min_samples != b->stop.min_samples || a->stop.min_time != b->stop.min_time ||
        a->stop.max_noise != b->stop.max_noise || a->stop.max_time != b->stop.max_time) {
        snprintf(why, n, "stopping rule differs");
        return false;
    }
    if (a->threshold != b->threshold) {
        snprintf(why, n, "threshold differs");
        return false;
    }
    if (a->rounds != b->rounds) {
        snprintf(why, n, "rounds differ (%d vs %d)", a->rounds, b->rounds);
        return false;
    }
    if (a->run_noise != b->run_noise) {
        snprintf(why, n, "run-level noise differs (%g vs %g)", a->run_noise, b->run_noise);
        return false;
    }
    if (a->attn_kernel != b->attn_kernel) {
        snprintf(why, n, "attention kernel differs (%s vs %s)", fc_word_name(&fc_attn_kernel_words, a->attn_kernel),
                 fc_word_name(&fc_attn_kernel_words, b->attn_kernel));
        return false;
    }
    return true;
}
