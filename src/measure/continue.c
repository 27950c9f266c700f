/* continue.c — see continue.h. */
#include "continue.h"
#include "host.h"

#include <stdlib.h>
#include <string.h>

int fc_continue_load(fc_continuation *c, const char *path, bool resume, fc_err *e)
{
    memset(c, 0, sizeof *c);
    c->was_complete = true;
    if (!path) return 0;
    c->path = path;
    c->resume = resume;
    fc_err le;
    if (fc_doc_load(path, &c->prev, &le) != 0) return fc_errf(e, "cannot continue '%s': %s", path, le.msg);
    c->loaded = true;
    c->was_complete = c->prev.complete || resume;
    return 0;
}

int fc_continue_argv(const fc_continuation *c, int *argc, char ***argv, fc_err *e)
{
    int n = c->loaded ? cJSON_GetArraySize(c->prev.argv) : 0;
    if (n < 2) return fc_errf(e, "cannot resume '%s': it records no command line", c->path ? c->path : "");
    char **args = fc_xcalloc((size_t)n, sizeof *args);
    int k = 0;
    for (int i = 1; i < n; i++) { /* drop "fusecal" */
        const cJSON *a = cJSON_GetArrayItem(c->prev.argv, i);
        if (!cJSON_IsString(a)) break;
        args[k++] = fc_xstrdup(a->valuestring);
    }
    *argc = k;
    *argv = args;
    return 0;
}

int fc_continue_check_settings(const fc_continuation *c, const fc_settings *set, fc_err *e)
{
    char why[256];
    if (c->loaded && !fc_settings_compatible(set, &c->prev.settings, why, sizeof why))
        return fc_errf(e, "cannot continue '%s': its settings differ: %s", c->path, why);
    return 0;
}

int fc_continue_drop_measured(fc_continuation *c, fc_plan *plan)
{
    if (!c->loaded) return 0;
    /* records an interrupt closed early are measured again, in full; each stays in
     * the document until its new record replaces it (fc_doc_slot_for), so a run
     * stopped before then still writes it, and one for a problem this run leaves
     * out is kept */
    int kept = 0;
    for (int i = 0; i < plan->n; i++) {
        char ps[256];
        fc_problem_string(&plan->jobs[i].prob, ps, sizeof ps);
        bool done = false;
        for (int r = 0; r < c->prev.n && !done; r++) {
            char prev[256]; /* canonical: a string from an older fusecal may leave dims at their defaults */
            fc_problem_string(&c->prev.rec[r].prob, prev, sizeof prev);
            done = !strcmp(prev, ps) && !strcmp(c->prev.rec[r].backend, plan->jobs[i].backend->name) &&
                   strcmp(c->prev.rec[r].stop_rule, "interrupted") != 0;
        }
        if (!done) plan->jobs[kept++] = plan->jobs[i];
    }
    int dropped = plan->n - kept;
    plan->n = kept;
    return dropped;
}

static void add_history(fc_doc *doc, cJSON *argv)
{
    if (!doc->history) doc->history = cJSON_CreateArray();
    cJSON *h = cJSON_CreateObject();
    char now[32];
    fc_utc_timestamp(now);
    cJSON_AddStringToObject(h, "created_utc", now);
    cJSON_AddItemToObject(h, "argv", argv);
    cJSON_AddItemToArray(doc->history, h);
}

int fc_continue_begin(fc_continuation *c, const fc_settings *set, cJSON *host, cJSON *ceilings, cJSON *argv,
                      fc_doc *doc, fc_err *e)
{
    if (!c->loaded) {
        doc->settings = *set;
        doc->argv = argv;
        doc->host = host;
        doc->ceilings = ceilings;
        return 0;
    }
    char why[256];
    bool same = fc_host_compatible(c->prev.host, host, why, sizeof why);
    cJSON_Delete(host);
    cJSON_Delete(ceilings);
    if (!same) {
        cJSON_Delete(argv);
        return fc_errf(e, "cannot continue '%s': it was measured on another host or library build: %s", c->path, why);
    }
    fc_doc_free(doc);
    *doc = c->prev; /* its records, host, ceilings and settings */
    c->loaded = false;
    memset(&c->prev, 0, sizeof c->prev);
    add_history(doc, argv);
    return 0;
}

void fc_continue_end(const fc_continuation *c, fc_doc *doc)
{
    doc->complete = doc->complete && c->was_complete;
    /* a record an interrupt closed early that this run did not measure again */
    for (int i = 0; i < doc->n && doc->complete; i++)
        if (!strcmp(doc->rec[i].stop_rule, "interrupted")) doc->complete = false;
}

void fc_continue_free(fc_continuation *c)
{
    if (c->loaded) fc_doc_free(&c->prev);
    c->loaded = false;
}
