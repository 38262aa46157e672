/*
 * whatif/report.c: the study as one self-contained HTML page (inputs, the
 * table, two inline SVG charts; no script, no network) and the gnuplot
 * script behind --plot.
 *
 * The page's SVG is drawn here rather than by gnuplot so that the report
 * needs nothing installed: chart 1 is cost per model against expected
 * days (the Pareto front joined and marked), chart 2 the failure-free and
 * expected days per variant as bars.
 */
#include "whatif_int.h"

#include <stdlib.h>
#include <string.h>

static void html_text(FILE *fp, const char *t) {
    for (; *t; t++) {
        switch (*t) {
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '&': fputs("&amp;", fp); break;
        case '"': fputs("&quot;", fp); break;
        default: fputc(*t, fp);
        }
    }
}

/* A "nice" axis maximum: 1, 2 or 5 x 10^k at or above v. */
static double nice_max(double v) {
    if (!(v > 0)) return 1;
    double p = pow(10, floor(log10(v)));
    for (double m = 1; m <= 10; m = m == 1 ? 2 : m == 2 ? 5 : 10)
        if (m * p >= v) return m * p;
    return 10 * p;
}

#define W 640
#define H 360
#define L 90 /* left margin */
#define B 50 /* bottom margin */
#define T 20
#define R 20

static void axes(FILE *fp, double xmax, double ymax, const char *xl,
                 const char *yl, bool ymoney, bool xticks) {
    fprintf(fp,
            "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#333'/>"
            "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#333'/>\n",
            L, H - B, W - R, H - B, L, T, L, H - B);
    for (int i = 0; i <= 4; i++) {
        double fx = xmax * i / 4, fy = ymax * i / 4;
        int px = L + (W - L - R) * i / 4, py = H - B - (H - B - T) * i / 4;
        char m[32];
        if (xticks)
            fprintf(fp,
                    "<text x='%d' y='%d' font-size='11' "
                    "text-anchor='middle'>%.3g</text>",
                    px, H - B + 15, fx);
        fprintf(fp,
                "<text x='%d' y='%d' font-size='11' "
                "text-anchor='end'>%s</text>"
                "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#ddd'/>\n",
                L - 5, py + 4,
                ymoney ? pp_whatif_money(fy, m, sizeof m)
                       : (snprintf(m, sizeof m, "%.3g", fy), m),
                L, py, W - R, py);
    }
    fprintf(fp,
            "<text x='%d' y='%d' font-size='12' text-anchor='middle'>%s</text>"
            "<text x='15' y='%d' font-size='12' text-anchor='middle' "
            "transform='rotate(-90 15 %d)'>%s</text>\n",
            (L + W - R) / 2, H - 12, xl, (T + H - B) / 2, (T + H - B) / 2, yl);
}

static void chart_pareto(FILE *fp, const pp_whatif_result *r, size_t n) {
    double xmax = 0, ymax = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].status == 0) {
            xmax = fmax(xmax, r[i].expected_days);
            ymax = fmax(ymax, r[i].cost.total_usd);
        }
    xmax = nice_max(xmax * 1.05);
    ymax = nice_max(ymax * 1.05);
    fprintf(fp,
            "<svg id='chart-pareto' xmlns='http://www.w3.org/2000/svg' "
            "width='%d' height='%d' viewBox='0 0 %d %d'>\n"
            "<rect width='%d' height='%d' fill='white'/>\n",
            W, H, W, H, W, H);
    axes(fp, xmax, ymax, "expected days to train (with failures)",
         "cost per trained model", true, true);
#define PX(x) (L + (W - L - R) * (x) / xmax)
#define PY(y) (H - B - (H - B - T) * (y) / ymax)
    /* The front, joined in order of time. */
    fprintf(fp, "<polyline class='front' fill='none' stroke='#d62728' "
                "stroke-width='2' points='");
    size_t *ord = pp_xcalloc(n ? n : 1, sizeof *ord);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].pareto) ord[k++] = i;
    for (size_t a = 1; a < k; a++)
        for (size_t b = a; b > 0 &&
                           r[ord[b]].expected_days < r[ord[b - 1]].expected_days;
             b--) {
            size_t t = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = t;
        }
    for (size_t a = 0; a < k; a++)
        fprintf(fp, "%s%.1f,%.1f", a ? " " : "", PX(r[ord[a]].expected_days),
                PY(r[ord[a]].cost.total_usd));
    fputs("'/>\n", fp);
    free(ord);
    for (size_t i = 0; i < n; i++) {
        if (r[i].status) continue;
        fprintf(fp,
                "<circle class='point%s' cx='%.1f' cy='%.1f' r='%d' "
                "fill='%s'><title>",
                r[i].pareto ? " pareto" : "", PX(r[i].expected_days),
                PY(r[i].cost.total_usd), r[i].pareto ? 6 : 4,
                r[i].pareto ? "#d62728" : "#1f77b4");
        html_text(fp, r[i].label);
        fprintf(fp,
                "</title></circle><text x='%.1f' y='%.1f' font-size='10'>"
                "%zu</text>\n",
                PX(r[i].expected_days) + 7, PY(r[i].cost.total_usd) - 5, i + 1);
    }
#undef PX
#undef PY
    fputs("</svg>\n", fp);
}

static void chart_days(FILE *fp, const pp_whatif_result *r, size_t n) {
    double ymax = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].status == 0) ymax = fmax(ymax, r[i].expected_days);
    ymax = nice_max(ymax * 1.05);
    fprintf(fp,
            "<svg id='chart-days' xmlns='http://www.w3.org/2000/svg' "
            "width='%d' height='%d' viewBox='0 0 %d %d'>\n"
            "<rect width='%d' height='%d' fill='white'/>\n",
            W, H, W, H, W, H);
    axes(fp, (double)n, ymax, "variant (the table's #)", "days to train",
         false, false);
    double slot = (double)(W - L - R) / (double)(n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        if (r[i].status) continue;
        double x0 = L + slot * (double)i + slot * 0.1, w = slot * 0.4;
        double h1 = (H - B - T) * r[i].ideal_days / ymax;
        double h2 = (H - B - T) * r[i].expected_days / ymax;
        fprintf(fp,
                "<rect class='bar ideal' x='%.1f' y='%.1f' width='%.1f' "
                "height='%.1f' fill='#1f77b4'/>"
                "<rect class='bar expected' x='%.1f' y='%.1f' width='%.1f' "
                "height='%.1f' fill='#ff7f0e'/>\n",
                x0, H - B - h1, w, h1, x0 + w, H - B - h2, w, h2);
        fprintf(fp,
                "<text x='%.1f' y='%d' font-size='11' "
                "text-anchor='middle'>%zu</text>\n",
                x0 + w, H - B + 15, i + 1);
    }
    fprintf(fp,
            "<rect x='%d' y='%d' width='10' height='10' fill='#1f77b4'/>"
            "<text x='%d' y='%d' font-size='11'>failure-free</text>"
            "<rect x='%d' y='%d' width='10' height='10' fill='#ff7f0e'/>"
            "<text x='%d' y='%d' font-size='11'>with failures</text>\n",
            W - 200, T, W - 186, T + 9, W - 110, T, W - 96, T + 9);
    fputs("</svg>\n", fp);
}

int pp_whatif_write_html(const pp_whatif_study *s, const pp_whatif_result *r,
                         size_t n, FILE *fp, pp_error *e) {
    (void)e;
    fputs("<!DOCTYPE html>\n<html><head><meta charset='utf-8'>\n<title>"
          "podplan whatif: ",
          fp);
    html_text(fp, s->name);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:2em}"
          "table{border-collapse:collapse;font-size:13px}"
          "td,th{border:1px solid #bbb;padding:3px 6px;text-align:right}"
          "td.l,th.l{text-align:left}tr.pareto{background:#fde0dd}"
          "pre{background:#f4f4f4;padding:1em}</style>\n</head><body>\n<h1>",
          fp);
    html_text(fp, s->name);
    fputs("</h1>\n<h2>Inputs</h2>\n<pre id='inputs'>", fp);
    FILE *in = fopen(s->path, "r");
    if (in) {
        char line[1024];
        while (fgets(line, sizeof line, in)) html_text(fp, line);
        fclose(in);
    }
    fputs("</pre>\n<h2>Results</h2>\n<table id='results'>\n<tr><th>#</th>"
          "<th class='l'>variant</th><th class='l'>layout</th><th>GPUs</th>"
          "<th>iteration s</th><th>ratio</th><th>days</th>"
          "<th>days with failures</th><th>goodput</th><th>capital</th>"
          "<th>cost per model</th><th>tokens per $</th><th>MW</th>"
          "<th>Pareto</th></tr>\n",
          fp);
    for (size_t i = 0; i < n; i++) {
        const pp_whatif_result *x = &r[i];
        fprintf(fp, "<tr class='row%s'><td>%zu</td><td class='l'>",
                x->pareto ? " pareto" : "", i + 1);
        html_text(fp, x->label);
        fputs("</td><td class='l'>", fp);
        if (x->status) {
            html_text(fp, x->error);
            fputs("</td></tr>\n", fp);
            continue;
        }
        char m1[32], m2[32];
        html_text(fp, x->parallel);
        fprintf(fp,
                "</td><td>%lld</td><td>%.3f</td><td>%.2f</td><td>%.1f</td>"
                "<td>%.1f</td><td>%.1f%%</td><td>%s</td><td>%s</td>"
                "<td>%.0f</td><td>%.2f</td><td>%s</td></tr>\n",
                (long long)x->gpus, x->iteration_time_s, x->ratio,
                x->ideal_days, x->expected_days, 100 * x->fail.goodput,
                pp_whatif_money(x->cost.capex_usd, m1, sizeof m1),
                pp_whatif_money(x->cost.total_usd, m2, sizeof m2),
                x->tokens_per_usd, x->cost.facility_w / 1e6,
                x->pareto ? "&#9733;" : "");
    }
    fputs("</table>\n<h2>Time and cost</h2>\n", fp);
    chart_pareto(fp, r, n);
    fputs("<h2>Days to train per variant</h2>\n", fp);
    chart_days(fp, r, n);
    fputs("<p>Made by podplan whatif; the Pareto front (red) holds the "
          "variants no other beats on both expected days and cost per "
          "model among those meeting the constraints.</p>\n</body></html>\n",
          fp);
    return 0;
}

int pp_whatif_write_gnuplot(const pp_whatif_study *s,
                            const pp_whatif_result *r, size_t n,
                            const char *out_svg, FILE *fp, pp_error *e) {
    (void)e;
    fputs("set terminal svg size 800,500 dynamic enhanced background rgb "
          "'white'\nset output '",
          fp);
    for (const char *p = out_svg; *p; p++) {
        if (*p == '\'') fputc('\'', fp);
        fputc(*p, fp);
    }
    fputs("'\nset title '", fp);
    for (const char *p = s->name; *p; p++)
        if (*p != '\'') fputc(*p, fp);
    fputs(": cost per trained model against days to train'\n"
          "set xlabel 'expected days to train (with failures)'\n"
          "set ylabel 'cost per trained model (million $)'\n"
          "set grid\nset key top right\n$variants << EOD\n",
          fp);
    for (size_t i = 0; i < n; i++)
        if (r[i].status == 0)
            fprintf(fp, "%.6g %.6g\n", r[i].expected_days,
                    r[i].cost.total_usd / 1e6);
    fputs("EOD\n$front << EOD\n", fp);
    /* In order of time, so the line joins neighbours. */
    double last = -1;
    for (size_t k = 0; k < n; k++) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (r[i].pareto && r[i].expected_days > last &&
                (best == n || r[i].expected_days < r[best].expected_days))
                best = i;
        if (best == n) break;
        fprintf(fp, "%.6g %.6g\n", r[best].expected_days,
                r[best].cost.total_usd / 1e6);
        last = r[best].expected_days;
    }
    fputs("EOD\nplot $variants using 1:2 with points pt 7 ps 0.8 title "
          "'variants', \\\n     $front using 1:2 with linespoints pt 6 ps 1.5 "
          "lw 2 title 'Pareto front'\n",
          fp);
    return 0;
}
