/* report_network.c — the report's network section: for each document written by
 * `run --network` and each backend of its summary, the totals (unfused time of
 * the sites, the saving of fusing every yes site with its interval, the losing
 * sites), a bar chart of every measured site's saving per inference, ranked,
 * with its interval as a whisker, and the table of sites; then the network file's
 * description and notes. Reads the document's "network" block (checked against
 * the calibration schema when it was loaded); every string goes through
 * fc_xml_escape and only finite numbers are drawn. */
#include "report_network.h"
#include "jsonfile.h"
#include "svg.h"

#include <math.h>
#include <string.h>

#define TIMES "\xC3\x97" /* × */
#define CHART_W 640
#define ROW_H 18
#define MAX_BARS 60

static const char *decision_colour(const char *d)
{
    return !strcmp(d, "yes") ? "#1b7837" : !strcmp(d, "no") ? "#B00020" : "#8c8c8c";
}

static double ci_end(const cJSON *o, const char *key, int i, double def)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    const cJSON *x = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : def;
}

static const char *first_name(const cJSON *site)
{
    const cJSON *n = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(site, "names"), 0);
    return cJSON_IsString(n) ? n->valuestring : "";
}

static void bar(fc_chart *c, const cJSON *site, int row)
{
    fc_str *o = c->out;
    double s = fc_json_num(site, "saving_ms", NAN);
    double lo = ci_end(site, "saving_ci95", 0, s), hi = ci_end(site, "saving_ci95", 1, s);
    if (!isfinite(s)) return;
    lo = fmax(lo, c->x.lo);
    hi = fmin(hi, c->x.hi);
    double y = c->top + (row + 0.5) * ROW_H, x0 = fc_chart_px(c, 0), x1 = fc_chart_px(c, s);
    char label[48];
    snprintf(label, sizeof label, "%.28s", first_name(site));
    fc_str_addf(o, "<g><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", c->left - 6, y + 4);
    fc_xml_escape(o, label);
    fc_str_addf(o, " " TIMES "%g</text>\n", fc_json_num(site, "multiplicity", 1));
    fc_str_addf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>", fmin(x0, x1),
                y - 6, fabs(x1 - x0), 12.0, decision_colour(fc_json_str(site, "decision", "")));
    fc_xml_addf(o, "%s: %s, saves %.4g ms per inference [%.4g, %.4g]", fc_json_str(site, "problem", ""),
                fc_json_str(site, "decision", ""), s, lo, hi);
    fc_str_addf(o, "</title></rect>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/></g>\n",
                fc_chart_px(c, lo), y, fc_chart_px(c, hi), y);
}

static void chart(fc_str *o, const cJSON *per_site)
{
    int n = 0;
    double v[2 * MAX_BARS + 1];
    int nv = 0;
    v[nv++] = 0;
    for (const cJSON *s = per_site->child; s && n < MAX_BARS; s = s->next) {
        if (!fc_json_bool(s, "measured", false) || !isfinite(fc_json_num(s, "saving_ms", NAN))) continue;
        v[nv++] = ci_end(s, "saving_ci95", 0, fc_json_num(s, "saving_ms", 0));
        v[nv++] = ci_end(s, "saving_ci95", 1, fc_json_num(s, "saving_ms", 0));
        n++;
    }
    if (!n) return;
    fc_chart c;
    memset(&c, 0, sizeof c);
    c.x = (fc_axis){.label = "saving per inference (ms): multiplicity " TIMES
                             " (unfused "
                             "\xE2\x88\x92"
                             " fused)"};
    fc_axis_fit(&c.x, v, nv);
    c.y = (fc_axis){.lo = 0, .hi = n, .label = NULL};
    fc_str_add(o, "<div class=\"plot\">");
    fc_chart_begin(&c, o, CHART_W, 14 + n * ROW_H + 46, "saving per inference, per site",
                   "Each measured site's saving per inference, largest first: green fuse yes, red no, grey "
                   "inconclusive; the whisker is the saving's 95% interval.",
                   "data-chart=\"network\"");
    c.left = 230;
    c.top = 14;
    c.bottom = c.top + n * ROW_H;
    fc_chart_axes(&c);
    int row = 0;
    for (const cJSON *s = per_site->child; s && row < n; s = s->next)
        if (fc_json_bool(s, "measured", false) && isfinite(fc_json_num(s, "saving_ms", NAN))) bar(&c, s, row++);
    fc_chart_end(&c);
    fc_str_add(o, "</div>\n");
}

static void site_row(fc_str *o, int rank, const cJSON *s)
{
    fc_str_addf(o, "<tr><td class=\"num\">%d</td><td>", rank);
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(s, "names");
    int k = 0;
    for (const cJSON *nm = names ? names->child : NULL; nm; nm = nm->next, k++) {
        if (k) fc_str_add(o, ", ");
        if (cJSON_IsString(nm)) fc_xml_escape(o, nm->valuestring);
    }
    fc_str_add(o, "</td><td><code>");
    fc_xml_escape(o, fc_json_str(s, "problem", ""));
    fc_str_addf(o, "</code></td><td class=\"num\">%g</td>", fc_json_num(s, "multiplicity", 0));
    if (!fc_json_bool(s, "measured", false)) {
        fc_str_add(o, "<td colspan=\"3\">not measured on this backend</td></tr>\n");
        return;
    }
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(s, "speedup");
    fc_str_add(o, "<td>");
    fc_xml_escape(o, fc_json_str(s, "decision", ""));
    fc_str_addf(o, "</td><td class=\"num\">%.3f [%.3f, %.3f]</td>", fc_json_num(sp, "ratio", NAN),
                ci_end(sp, "ci95", 0, NAN), ci_end(sp, "ci95", 1, NAN));
    fc_str_addf(o, "<td class=\"num\">%.4g [%.4g, %.4g]</td></tr>\n", fc_json_num(s, "saving_ms", NAN),
                ci_end(s, "saving_ci95", 0, NAN), ci_end(s, "saving_ci95", 1, NAN));
}

static void summary(fc_str *o, const cJSON *net, const cJSON *sum, const char *file)
{
    fc_str_add(o, "<figure class=\"chart network\">\n<h3>");
    fc_xml_addf(o, "%s, batch %g", fc_json_str(net, "name", ""), fc_json_num(net, "batch", 1));
    if (cJSON_GetObjectItemCaseSensitive(net, "seq")) fc_str_addf(o, ", seq %g", fc_json_num(net, "seq", 0));
    fc_xml_addf(o, " on %s", fc_json_str(sum, "backend", ""));
    fc_str_add(o, " <span class=\"math\">");
    fc_xml_escape(o, file);
    fc_str_add(o, "</span></h3>\n");
    fc_str_add(o, "<p>");
    fc_xml_addf(o,
                "%d of %d unique sites measured; unfused, they take %.4g ms per inference. Fusing the %d yes sites "
                "saves %.4g ms [%.4g, %.4g] per inference",
                fc_json_int(sum, "measured", 0), fc_json_int(sum, "sites", 0), fc_json_num(sum, "unfused_ms", 0),
                fc_json_int(sum, "fuse_yes", 0), fc_json_num(sum, "saving_ms", 0), ci_end(sum, "saving_ci95", 0, 0),
                ci_end(sum, "saving_ci95", 1, 0));
    if (cJSON_GetObjectItemCaseSensitive(sum, "saving_pct"))
        fc_str_addf(o, " (%.1f%% of the sites' time)", fc_json_num(sum, "saving_pct", 0));
    const cJSON *losing = cJSON_GetObjectItemCaseSensitive(sum, "losing");
    fc_str_addf(o, ". Sites that lose when fused: %d.</p>\n", cJSON_GetArraySize(losing));
    const cJSON *per_site = cJSON_GetObjectItemCaseSensitive(sum, "per_site");
    chart(o, per_site);
    fc_str_add(o,
               "<div class=\"scroll\"><table>\n<thead><tr><th>#</th><th>names in the model</th><th>problem</th>"
               "<th>" TIMES
               "</th><th>fuse</th><th>speedup [95%]</th><th>saving ms [95%]</th></tr></thead>\n"
               "<tbody>\n");
    int rank = 1;
    for (const cJSON *s = per_site ? per_site->child : NULL; s; s = s->next) site_row(o, rank++, s);
    fc_str_add(o, "</tbody></table></div>\n<p class=\"method\">");
    fc_xml_escape(o, fc_json_str(net, "interval_method", ""));
    fc_str_add(o, "</p>\n</figure>\n");
}

bool fc_report_has_network(const fc_report_input *in, int n)
{
    for (int f = 0; f < n; f++)
        if (in[f].doc->network) return true;
    return false;
}

/* The network file's description and notes, beneath the document's summaries:
 * what the sites stand for and what lies outside them. */
static void file_notes(fc_str *o, const cJSON *net)
{
    const char *desc = fc_json_str(net, "description", "");
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(net, "notes");
    if (!desc[0] && cJSON_GetArraySize(notes) == 0) return;
    fc_str_add(o, "<details class=\"notes\"><summary>");
    fc_xml_addf(o, "%s: the network file's notes", fc_json_str(net, "name", ""));
    fc_str_add(o, "</summary>\n");
    if (desc[0]) {
        fc_str_add(o, "<p>");
        fc_xml_escape(o, desc);
        fc_str_add(o, "</p>\n");
    }
    if (cJSON_GetArraySize(notes) > 0) {
        fc_str_add(o, "<ul>\n");
        for (const cJSON *nt = notes->child; nt; nt = nt->next) {
            fc_str_add(o, "<li>");
            if (cJSON_IsString(nt)) fc_xml_escape(o, nt->valuestring);
            fc_str_add(o, "</li>\n");
        }
        fc_str_add(o, "</ul>\n");
    }
    fc_str_add(o, "</details>\n");
}

void fc_report_network(fc_str *o, const fc_report_input *in, int n)
{
    if (!fc_report_has_network(in, n)) return;
    fc_str_add(o,
               "<section id=\"network\">\n<h2>Networks</h2>\n"
               "<p>What fusing a network's sites saves per inference: each unique site measured once, its saving "
               "multiplied by the times it runs per inference. Sites ranked by saving.</p>\n");
    for (int f = 0; f < n; f++) {
        const cJSON *net = in[f].doc->network;
        const cJSON *sums = cJSON_GetObjectItemCaseSensitive(net, "summaries");
        for (const cJSON *s = sums ? sums->child : NULL; s; s = s->next) summary(o, net, s, in[f].name);
        file_notes(o, net);
    }
    fc_str_add(o, "</section>\n");
}
