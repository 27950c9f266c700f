/* progress.c — see progress.h. */
#include "progress.h"
#include "format.h"
#include "peers.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fc_progress_init(fc_progress *p, FILE *out, bool quiet)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->quiet = quiet;
    p->tty = !quiet && isatty(fileno(out)) && getenv("TERM") && strcmp(getenv("TERM"), "dumb") != 0;
    p->t0 = fc_now();
}

static void duration(double s, char *buf, size_t n)
{
    if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

static void clear_line(fc_progress *p)
{
    if (p->line_open) {
        fputs("\r\033[K", p->out);
        p->line_open = false;
    }
}

void fc_progress_start(fc_progress *p, int i, int n, int pass, int npass, const fc_job *job)
{
    if (!p->tty) {
        if (npass > 1 && n > 1 && !p->quiet && p->shown_pass != pass + 1)
            fprintf(p->out, "pass %d: %s\n", pass + 1,
                    pass + 1 < npass || pass == 0 ? "one round of every problem, in a fresh worker process"
                                                  : "one more round of the problems whose interval is still wide");
        p->shown_pass = pass + 1;
        return;
    }
    double el = fc_now() - p->t0;
    char e1[32], e2[32] = "?", dims[256], ps[32] = "";
    duration(el, e1, sizeof e1);
    /* the passes after the minimum add rounds to some problems: about one pass more */
    int step = pass * n + i, steps = (npass + 1) * n;
    if (step > 0) duration(el / step * (steps - step), e2, sizeof e2);
    if (npass > 1 && n > 1) snprintf(ps, sizeof ps, "pass %d/%d ", pass + 1, npass);
    fc_format_dims(&job->prob, dims, sizeof dims);
    clear_line(p);
    fprintf(p->out, "%s[%d/%d] %s %s %s  %s elapsed, ~%s left%s%s", ps, i + 1, n, job->prob.pat->name,
            job->backend->name, dims, e1, e2, p->last[0] ? "  last: " : "", p->last);
    fflush(p->out);
    p->line_open = true;
}

void fc_progress_record(fc_progress *p, int i, int n, const fc_record *r)
{
    char sp[96];
    fc_format_speedup(r, sp, sizeof sp);
    if (r->status == FC_STATUS_OK)
        snprintf(p->last, sizeof p->last, "%s %s fuse=%s", r->prob.pat->name, sp, fc_decision_name(r->decision));
    else
        snprintf(p->last, sizeof p->last, "%s %s", r->prob.pat->name, fc_status_name(r->status));
    if (p->quiet || p->tty) return;
    char dims[256];
    fc_format_dims(&r->prob, dims, sizeof dims);
    if (r->status == FC_STATUS_OK)
        fprintf(p->out, "[%d/%d] %s %s %s: %s fuse=%s%s%s\n", i + 1, n, r->prob.pat->name, r->backend, dims, sp,
                fc_decision_name(r->decision), r->state.withheld ? " (withheld: the state moved)" : "",
                r->v[0].check.trusted && r->v[1].check.trusted ? "" : " (untrusted)");
    else
        fprintf(p->out, "[%d/%d] %s %s %s: %s: %s\n", i + 1, n, r->prob.pat->name, r->backend, dims,
                fc_status_name(r->status), r->reason);
    fflush(p->out);
}

void fc_progress_end(fc_progress *p)
{
    clear_line(p);
    fflush(p->out);
}

void fc_progress_note(fc_progress *p, const char *fmt, ...)
{
    if (p->quiet) return;
    clear_line(p);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->out, fmt, ap);
    va_end(ap);
    fputc('\n', p->out);
    fflush(p->out);
}

int fc_progress_peers(fc_progress *p, const char *out)
{
    char why[640];
    if (fc_peers_join(out, why, sizeof why) != 0)
        fc_progress_note(p, "fusecal: note: other fusecal runs will not see this one measuring: %s", why);
    int writer = fc_peers_writing(out);
    if (writer) return writer;
    int pid[3], n = fc_peers_count(pid, 3);
    if (n > 0)
        fc_progress_note(p,
                         "fusecal: warning: %d other fusecal run%s measuring on this machine (pid %d%s): each "
                         "disturbs the other's timings; records measured meanwhile say so (environment.contended)",
                         n, n == 1 ? " is" : "s are", pid[0], n > 1 ? ", ..." : "");
    return 0;
}

int fc_progress_ceilings(fc_progress *p, fc_session *s, fc_err *e)
{
    double age;
    int reused = fc_session_reuse_ceilings(s, &age);
    if (reused == s->ndev) {
        fc_progress_note(p,
                         "fusecal: this machine's ceilings as measured %.0f min ago on this boot ('fusecal info' "
                         "measures them again)",
                         age / 60);
        return 0;
    }
    fc_progress_note(p, "fusecal: measuring this machine's ceilings (kept for an hour for later runs)");
    return fc_session_ceilings(s, e);
}

void fc_progress_stop_rule(fc_progress *p, const fc_plan *plan, const fc_settings *set)
{
    const fc_stop *st = &set->stop;
    double cap = 2 * st->max_time * plan->n; /* at least two variants a record, each up to its cap */
    if (cap < FC_LONG_RUN_S) return;
    char total[32];
    duration(cap, total, sizeof total);
    fc_progress_note(p,
                     "fusecal: note: each record: %d rounds or more (up to %d) until the speedup's 95%% interval is "
                     "within \xC2\xB1%.3g%%, at most %.3g s of samples per variant: up to %s of samples for %d "
                     "record%s; --quick trades precision for time",
                     set->rounds, FC_MAX_ROUNDS, 100 * st->max_noise, st->max_time, total, plan->n,
                     plan->n == 1 ? "" : "s");
}

void fc_progress_test_fast(fc_progress *p, fc_settings *set, bool sweep)
{
    if (!fc_test_fast_settings(set)) return;
    if (sweep && (set->max_time_total <= 0 || set->max_time_total > FC_TEST_FAST_TOTAL_S))
        set->max_time_total = FC_TEST_FAST_TOTAL_S;
    fc_progress_note(p,
                     "fusecal: note: FUSECAL_TEST_FAST=1: the shortest stopping settings%s, for tests; these "
                     "numbers mean nothing",
                     sweep ? " and a sweep ended after a few seconds" : "");
}
