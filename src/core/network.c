/* network.c — see network.h. */
#include "network.h"
#include "embedded.h"
#include "jsonfile.h"
#include "jsonschema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NETWORK_SCHEMA "schemas/network.schema.json"
#define NETWORK_DIR "patterns/networks/"
#define MAX_SITES 100000

static const char *const scale_names[] = {"", "batch", "seq", "batch*seq"};

static void site_free(fc_net_site *s)
{
    for (int i = 0; i < s->nnames; i++) free(s->names[i]);
    free(s->names);
}

static void sites_free(fc_net_site *s, int n)
{
    for (int i = 0; i < n; i++) site_free(&s[i]);
    free(s);
}

void fc_network_free(fc_network *net)
{
    sites_free(net->site, net->n);
    sites_free(net->raw, net->nraw);
    for (int i = 0; i < net->nnotes; i++) free(net->notes[i]);
    free(net->notes);
    memset(net, 0, sizeof *net);
}

int64_t fc_network_runs(const fc_network *net)
{
    int64_t t = 0;
    for (int i = 0; i < net->n; i++) t += net->site[i].multiplicity;
    return t;
}

cJSON *fc_network_json(const fc_network *net)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", net->name);
    cJSON_AddStringToObject(o, "origin", net->origin);
    cJSON_AddNumberToObject(o, "batch", (double)net->batch);
    if (net->seq) cJSON_AddNumberToObject(o, "seq", (double)net->seq);
    cJSON_AddNumberToObject(o, "runs_per_inference", (double)fc_network_runs(net));
    if (net->description[0]) cJSON_AddStringToObject(o, "description", net->description);
    if (net->nnotes > 0) {
        cJSON *notes = cJSON_AddArrayToObject(o, "notes");
        for (int i = 0; i < net->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(net->notes[i]));
    }
    return o;
}

void fc_net_site_names(const fc_net_site *s, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < s->nnames && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? ", " : "", s->names[i]);
}

/* ------------------------------------------------------------------ embedded */

static bool network_file(const fc_embedded_file *f)
{
    size_t len = strlen(f->path);
    return !strncmp(f->path, NETWORK_DIR, strlen(NETWORK_DIR)) && len > 5 && !strcmp(f->path + len - 5, ".json");
}

const char *fc_network_embedded(int i)
{
    static char name[64];
    for (const fc_embedded_file *f = fc_embedded_files; f->path; f++) {
        if (!network_file(f) || i--) continue;
        const char *base = f->path + strlen(NETWORK_DIR);
        size_t len = strlen(base) - 5;
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, base, len);
        name[len] = 0;
        return name;
    }
    return NULL;
}

const char *fc_network_names(void)
{
    static char buf[512];
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; fc_network_embedded(i) && off < sizeof buf; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", i ? ", " : "", fc_network_embedded(i));
    return buf;
}

/* ------------------------------------------------------------------ merging */

static bool same_problem(const fc_problem *a, const fc_problem *b)
{
    char x[256], y[256];
    fc_problem_string(a, x, sizeof x);
    fc_problem_string(b, y, sizeof y);
    return !strcmp(x, y);
}

/* Folds site j into site i: multiplicities summed, names appended. */
static void fold(fc_net_site *dst, fc_net_site *src)
{
    dst->multiplicity += src->multiplicity;
    dst->names = fc_xrealloc(dst->names, (size_t)(dst->nnames + src->nnames) * sizeof *dst->names);
    memcpy(dst->names + dst->nnames, src->names, (size_t)src->nnames * sizeof *src->names);
    dst->nnames += src->nnames;
    free(src->names);
    memset(src, 0, sizeof *src);
}

static void merge(fc_network *net)
{
    int out = 0;
    for (int i = 0; i < net->n; i++) {
        int j = 0;
        while (j < out && !same_problem(&net->site[j].prob, &net->site[i].prob)) j++;
        if (j < out) fold(&net->site[j], &net->site[i]);
        else
            net->site[out++] = net->site[i];
    }
    net->n = out;
}

/* ------------------------------------------------------------------ rescaling */

static int64_t scale_base(fc_scale sc, int64_t batch, int64_t seq)
{
    switch (sc) {
    case FC_SCALE_BATCH: return batch;
    case FC_SCALE_SEQ: return seq;
    case FC_SCALE_TOKENS: return batch * seq;
    default: return 1;
    }
}

/* Site s of the file at (batch, seq) into *out (its names copied). */
static int rescale_site(const fc_network *net, int idx, int64_t batch, int64_t seq, fc_net_site *out, fc_err *e)
{
    const fc_net_site *s = &net->raw[idx];
    const int64_t seq0 = net->seq0 ? net->seq0 : 1;
    fc_problem p = s->prob;
    const fc_family *fam = fc_family_of(p.pat);
    for (int d = 0; d < fam->ndims; d++) {
        if (s->scale[d] == FC_SCALE_NONE) continue;
        int64_t from = scale_base(s->scale[d], net->batch0, seq0), to = scale_base(s->scale[d], batch, seq);
        if (p.d[d] % from)
            return fc_errf(e, "%s: site %d (%s): %s=%lld is not a multiple of %s=%lld", net->name, idx, s->names[0],
                           fam->dims[d].name, (long long)p.d[d], scale_names[s->scale[d]], (long long)from);
        if (p.d[d] / from > INT64_MAX / to)
            return fc_errf(e, "%s: site %d (%s): %s overflows at this size", net->name, idx, s->names[0],
                           fam->dims[d].name);
        p.d[d] = p.d[d] / from * to;
    }
    /* a dim left at its default follows its dim at the new size (attention's skv: s) */
    for (int d = 0; d < fam->ndims; d++) {
        int f = fc_family_dim_follows(fam, d);
        if (f >= 0 && s->scale[d] == FC_SCALE_NONE && s->prob.d[d] == s->prob.d[f]) p.d[d] = p.d[f];
    }
    char ps[256];
    fc_err pe;
    fc_problem_string(&p, ps, sizeof ps);
    if (fc_problem_parse(ps, NULL, &out->prob, &pe) != 0)
        return fc_errf(e, "%s: site %d (%s) at batch %lld, seq %lld: %s", net->name, idx, s->names[0], (long long)batch,
                       (long long)seq, pe.msg);
    out->multiplicity = s->multiplicity;
    memcpy(out->scale, s->scale, sizeof out->scale);
    out->nnames = s->nnames;
    out->names = fc_xcalloc((size_t)s->nnames, sizeof *out->names);
    for (int k = 0; k < s->nnames; k++) out->names[k] = fc_xstrdup(s->names[k]);
    return 0;
}

int fc_network_rescale(fc_network *net, int64_t batch, int64_t seq, fc_err *e)
{
    if (batch <= 0) batch = net->batch;
    if (seq > 0 && net->seq0 == 0) return fc_errf(e, "%s: the network has no sequence length to set", net->name);
    if (seq <= 0) seq = net->seq;
    fc_net_site *site = fc_xcalloc((size_t)net->nraw, sizeof *site);
    for (int i = 0; i < net->nraw; i++)
        if (rescale_site(net, i, batch, seq ? seq : 1, &site[i], e) != 0) {
            sites_free(site, i);
            return -1;
        }
    sites_free(net->site, net->n);
    net->site = site;
    net->n = net->nraw;
    net->batch = batch;
    net->seq = seq;
    merge(net);
    return 0;
}

static void retype(fc_problem *p, const fc_dtype *dtype, fc_layout layout)
{
    if (dtype) p->dtype = *dtype;
    if (layout != FC_LAYOUT_NONE && fc_family_of(p->pat)->has_layout) p->layout = layout;
}

void fc_network_retype(fc_network *net, const fc_dtype *dtype, fc_layout layout)
{
    for (int i = 0; i < net->nraw; i++) retype(&net->raw[i].prob, dtype, layout);
    for (int i = 0; i < net->n; i++) retype(&net->site[i].prob, dtype, layout);
    merge(net);
}

/* ------------------------------------------------------------------ parsing */

static fc_scale scale_parse(const char *s)
{
    for (int i = 1; i < (int)FC_ARRAY_LEN(scale_names); i++)
        if (!strcmp(s, scale_names[i])) return (fc_scale)i;
    return FC_SCALE_NONE; /* the schema rules it out */
}

static int parse_scale(const char *name, int idx, const cJSON *sc, fc_net_site *s, bool has_seq, fc_err *e)
{
    for (const cJSON *kv = sc ? sc->child : NULL; kv; kv = kv->next) {
        int d = fc_problem_dim_index(&s->prob, kv->string);
        if (d < 0 || fc_family_of(s->prob.pat)->dims[d].derived)
            return fc_errf(e, "%s: site %d: scale names '%s', not a dim of %s", name, idx, kv->string,
                           s->prob.pat->name);
        s->scale[d] = scale_parse(kv->valuestring);
        if (s->scale[d] != FC_SCALE_BATCH && !has_seq)
            return fc_errf(e, "%s: site %d: %s scales with the sequence length, which the network does not give", name,
                           idx, kv->string);
    }
    return 0;
}

static int parse_site(const char *name, int idx, const cJSON *j, fc_network *net, fc_err *e)
{
    fc_err pe;
    fc_net_site s = {0};
    const char *ps = fc_json_str(j, "problem", "");
    if (fc_problem_parse(ps, NULL, &s.prob, &pe) != 0)
        return fc_errf(e, "%s: site %d ('%s'): %s", name, idx, ps, pe.msg);
    s.multiplicity = cJSON_GetObjectItemCaseSensitive(j, "multiplicity")->valuedouble;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(j, "names");
    s.nnames = cJSON_GetArraySize(names);
    s.names = fc_xcalloc((size_t)s.nnames, sizeof *s.names);
    int k = 0;
    for (const cJSON *nm = names->child; nm; nm = nm->next) s.names[k++] = fc_xstrdup(nm->valuestring);
    if (parse_scale(name, idx, cJSON_GetObjectItemCaseSensitive(j, "scale"), &s, net->seq > 0, e) != 0) {
        site_free(&s);
        return -1;
    }
    if (net->nraw == net->capraw) {
        net->capraw = net->capraw ? 2 * net->capraw : 64;
        net->raw = fc_xrealloc(net->raw, (size_t)net->capraw * sizeof *net->raw);
    }
    net->raw[net->nraw++] = s;
    return 0;
}

/* A name and the site that gives it, in the file's order. */
typedef struct named {
    const char *name;
    int site, at; /* at: its place among every name of the file */
} named;

static int by_name(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* A layer named by two sites (or twice by one) would count its runs twice: the
 * first name, in the file's order, that an earlier one repeats is an error. */
static int unique_names(const char *name, const fc_network *net, fc_err *e)
{
    int n = 0;
    for (int i = 0; i < net->nraw; i++) n += net->raw[i].nnames;
    named *all = fc_xcalloc(n > 0 ? (size_t)n : 1, sizeof *all);
    int k = 0;
    for (int i = 0; i < net->nraw; i++)
        for (int j = 0; j < net->raw[i].nnames; j++, k++) all[k] = (named){net->raw[i].names[j], i, k};
    qsort(all, (size_t)n, sizeof *all, by_name);
    const named *dup = NULL, *first = NULL;
    for (int i = 1, g = 0; i < n; i++) {
        if (strcmp(all[i].name, all[g].name)) g = i;
        else if (!dup || all[i].at < dup->at) {
            dup = &all[i];
            first = &all[g];
        }
    }
    int rc = 0;
    if (dup && dup->site == first->site)
        rc = fc_errf(e, "%s: site %d: name '%s' given twice", name, dup->site, dup->name);
    else if (dup)
        rc = fc_errf(e, "%s: site %d: name '%s' also names site %d", name, dup->site, dup->name, first->site);
    free(all);
    return rc;
}

static int parse_root(const char *name, const cJSON *root, fc_network *net, fc_err *e)
{
    if (fc_schema_check(NETWORK_SCHEMA, root, name, e) != 0) return -1;
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (sv->valuedouble > FC_NETWORK_VERSION)
        return fc_errf(e, "%s: network schema version %g is newer than this fusecal reads (%d)", name, sv->valuedouble,
                       FC_NETWORK_VERSION);
    fc_strlcpy(net->name, fc_json_str(root, "name", ""), sizeof net->name);
    fc_strlcpy(net->description, fc_json_str(root, "description", ""), sizeof net->description);
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(root, "notes");
    if (cJSON_GetArraySize(notes) > 0) net->notes = fc_xcalloc((size_t)cJSON_GetArraySize(notes), sizeof *net->notes);
    for (const cJSON *nt = notes ? notes->child : NULL; nt; nt = nt->next)
        net->notes[net->nnotes++] = fc_xstrdup(nt->valuestring);
    net->batch = net->batch0 = (int64_t)fc_json_num(root, "batch", 1);
    net->seq = net->seq0 = (int64_t)fc_json_num(root, "seq", 0);
    fc_stop_defaults(&net->stop.stop);
    fc_sweep_parse_stop(cJSON_GetObjectItemCaseSensitive(root, "stop"), &net->stop);
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(root, "sites");
    if (cJSON_GetArraySize(sites) > MAX_SITES) return fc_errf(e, "%s: more than %d sites", name, MAX_SITES);
    int i = 0;
    for (const cJSON *s = sites->child; s; s = s->next, i++)
        if (parse_site(name, i, s, net, e) != 0) return -1;
    if (unique_names(name, net, e) != 0) return -1;
    return fc_network_rescale(net, net->batch0, net->seq0, e);
}

int fc_network_parse(const char *name, const char *text, size_t len, fc_network *net, fc_err *e)
{
    memset(net, 0, sizeof *net);
    fc_strlcpy(net->origin, name, sizeof net->origin);
    cJSON *root;
    if (fc_json_parse(name, text, len, &root, e) != 0) return -1;
    int rc = parse_root(name, root, net, e);
    cJSON_Delete(root);
    if (rc != 0) fc_network_free(net);
    return rc;
}

int fc_network_load(const char *name, fc_network *net, fc_err *e)
{
    char path[256];
    snprintf(path, sizeof path, NETWORK_DIR "%s.json", name);
    const fc_embedded_file *f = strchr(name, '/') ? NULL : fc_embedded_find(path);
    if (f) return fc_network_parse(path, f->data, f->len, net, e);
    char *text;
    size_t len;
    if (fc_read_file(name, FC_JSON_MAX_BYTES, &text, &len, e) != 0) {
        if (!strchr(name, '/') && !strchr(name, '.'))
            return fc_errf(e, "unknown network '%s' (valid: %s, or a network file)", name, fc_network_names());
        return -1;
    }
    int rc = fc_network_parse(name, text, len, net, e);
    free(text);
    return rc;
}
