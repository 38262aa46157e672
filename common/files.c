/*
 * files.c: atomic output files and the search for shipped data files.
 */
#include "podplan/common.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int pp_outfile_open(pp_outfile *of, const char *path, pp_error *e) {
    memset(of, 0, sizeof *of);
    if (!path || strcmp(path, "-") == 0) {
        of->fp = stdout;
        return 0;
    }
    size_t n = strlen(path) + 32;
    of->path = pp_xstrdup(path);
    of->tmp = pp_xmalloc(n);
    snprintf(of->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    of->fp = fopen(of->tmp, "wb");
    if (!of->fp) {
        int err = errno;
        free(of->path);
        free(of->tmp);
        memset(of, 0, sizeof *of);
        return pp_error_set(e, PP_EIO, "%s: cannot write: %s", path,
                            strerror(err));
    }
    return 0;
}

int pp_outfile_commit(pp_outfile *of, pp_error *e) {
    int rc = 0;
    if (!of->fp) return 0;
    if (of->fp == stdout) {
        if (fflush(stdout) != 0)
            rc = pp_error_set(e, PP_EIO, "stdout: %s", strerror(errno));
        of->fp = NULL;
        return rc;
    }
    int bad = ferror(of->fp);
    if (fclose(of->fp) != 0 || bad) {
        rc = pp_error_set(e, PP_EIO, "%s: write failed: %s", of->path,
                          strerror(errno));
        remove(of->tmp);
    } else if (rename(of->tmp, of->path) != 0) {
        rc = pp_error_set(e, PP_EIO, "%s: cannot rename into place: %s",
                          of->path, strerror(errno));
        remove(of->tmp);
    }
    free(of->path);
    free(of->tmp);
    memset(of, 0, sizeof *of);
    return rc;
}

void pp_outfile_abort(pp_outfile *of) {
    if (of->fp && of->fp != stdout) {
        fclose(of->fp);
        remove(of->tmp);
    }
    free(of->path);
    free(of->tmp);
    memset(of, 0, sizeof *of);
}

static bool readable(const char *path) {
    return access(path, R_OK) == 0;
}

size_t pp_data_roots(const char **roots, size_t max) {
    static char exe_root[4096 + 32];
    size_t n = 0;
    const char *env = getenv("PODPLAN_DATA_DIR");
    if (env && *env && n < max) roots[n++] = env;
    /* The install layout is bin/podplan next to share/podplan: found from
     * the binary itself, so a tree installed under one prefix and moved
     * (or unpacked from a tarball) still finds its data. */
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(exe_root, sizeof exe_root, "%s/../share/podplan", exe);
            if (n < max) roots[n++] = exe_root;
        }
    }
    const char *nosrc = getenv("PODPLAN_NO_SOURCE_DIR");
    if (!(nosrc && *nosrc && strcmp(nosrc, "0") != 0) && n < max)
        roots[n++] = PODPLAN_SOURCE_DIR;
    if (n < max) roots[n++] = PODPLAN_DATA_INSTALL_DIR;
    return n;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t pp_data_names(const char *subdir, char ***out, const char **root) {
    const char *roots[8];
    size_t nr = pp_data_roots(roots, 8);
    static char dir[4096];
    *out = NULL;
    if (root) *root = NULL;
    for (size_t r = 0; r < nr; r++) {
        snprintf(dir, sizeof dir, "%s/%s", roots[r], subdir);
        DIR *d = opendir(dir);
        if (!d) continue;
        char **v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            size_t l = strlen(de->d_name);
            if (l <= 5 || strcmp(de->d_name + l - 5, ".yaml") != 0 ||
                de->d_name[0] == '.')
                continue;
            /* hardware.yaml is the catalogue, not a cluster. */
            if (strcmp(subdir, "topologies") == 0 &&
                strcmp(de->d_name, "hardware.yaml") == 0)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                v = pp_xrealloc(v, cap * sizeof *v);
            }
            v[n] = pp_xmalloc(l - 4);
            memcpy(v[n], de->d_name, l - 5);
            v[n][l - 5] = '\0';
            n++;
        }
        closedir(d);
        if (n) qsort(v, n, sizeof *v, cmp_str);
        *out = v;
        if (root) *root = dir;
        return n;
    }
    return 0;
}

void pp_data_names_free(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* What `podplan list` calls the files of a data folder. */
static const char *list_kind(const char *subdir) {
    if (strcmp(subdir, "models/zoo") == 0) return "models";
    if (strcmp(subdir, "topologies") == 0) return "clusters";
    if (strcmp(subdir, "topologies/profiles") == 0) return "profiles";
    return NULL;
}

int pp_data_find(const char *subdir, const char *name, char *buf, size_t len,
                 pp_error *e) {
    if (readable(name) && strchr(name, '/') != NULL) {
        snprintf(buf, len, "%s", name);
        return 0;
    }
    if (readable(name)) { /* a file in the working directory */
        FILE *fp = fopen(name, "r");
        if (fp) {
            fclose(fp);
            snprintf(buf, len, "%s", name);
            return 0;
        }
    }
    if (strchr(name, '/') != NULL)
        return pp_error_set(e, PP_ENOENT, "%s: no such file", name);
    const char *roots[8];
    size_t nr = pp_data_roots(roots, 8);
    const char *ext = strstr(name, ".yaml") ? "" : ".yaml";
    for (size_t i = 0; i < nr; i++) {
        snprintf(buf, len, "%s/%s/%s%s", roots[i], subdir, name, ext);
        if (readable(buf)) return 0;
    }
    char **names = NULL, near[512] = "";
    const char *dir = NULL;
    size_t n = pp_data_names(subdir, &names, &dir);
    char stem[256];
    pp_file_stem(name, stem, sizeof stem); /* names are listed without .yaml */
    pp_suggest(stem, (const char *const *)names, n, near, sizeof near);
    pp_data_names_free(names, n);
    const char *kind = list_kind(subdir);
    char see[160];
    if (kind)
        snprintf(see, sizeof see, "`podplan list %s` shows them", kind);
    else
        snprintf(see, sizeof see, "see `ls %s`", dir ? dir : subdir);
    if (near[0])
        return pp_error_set(e, PP_ENOENT,
                            "\"%s\" is neither a file nor a name in %s/ (did "
                            "you mean %s?); %s",
                            name, subdir, near, see);
    if (!dir)
        return pp_error_set(e, PP_ENOENT,
                            "\"%s\" is not a file and no data folder has %s/ "
                            "(set PODPLAN_DATA_DIR to the folder holding it)",
                            name, subdir);
    return pp_error_set(e, PP_ENOENT,
                        "\"%s\" is neither a file nor a name in %s/; %s", name,
                        subdir, see);
}

/* Whether `prog` is an executable file in a folder of $PATH. */
static bool on_path(const char *prog) {
    const char *path = getenv("PATH");
    if (!path) return false;
    char buf[4096];
    for (const char *p = path; *p;) {
        const char *c = strchr(p, ':');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, prog);
        if (access(buf, X_OK) == 0) return true;
        if (!c) break;
        p = c + 1;
    }
    return false;
}

int pp_gnuplot_svg(const char *svg_path, const char *hint,
                   void (*write)(FILE *script, const char *tmp_svg, void *ctx),
                   void *ctx, pp_error *e) {
    if (!on_path("gnuplot"))
        return pp_error_set(e, PP_ENOSYS,
                            "--plot: gnuplot not found: install it (Debian: "
                            "apt-get install gnuplot-nox)%s",
                            hint ? hint : "");
    size_t len = strlen(svg_path) + 32;
    char *svg = pp_xmalloc(len);
    snprintf(svg, len, "%s.tmp.%ld", svg_path, (long)getpid());
    char script[] = "/tmp/podplan-gnuplot-XXXXXX";
    int fd = mkstemp(script), rc = 0;
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!fp) {
        if (fd >= 0) {
            close(fd);
            unlink(script);
        }
        rc = pp_error_set(e, PP_EIO, "--plot: temporary script: %s",
                          strerror(errno));
        free(svg);
        return rc;
    }
    write(fp, svg, ctx);
    if (fclose(fp) != 0) {
        rc = pp_error_set(e, PP_EIO, "--plot: %s: write failed", script);
        goto out;
    }
    /* fork + exec, not system(): no shell parses the paths. */
    pid_t pid = fork();
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0) {
        rc = pp_error_set(e, PP_EFAIL, "--plot: gnuplot failed (status %d)",
                          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        unlink(svg);
    } else if (rename(svg, svg_path) != 0) {
        rc = pp_error_set(e, PP_EIO, "--plot: %s: %s", svg_path,
                          strerror(errno));
        unlink(svg);
    }
out:
    unlink(script);
    free(svg);
    return rc;
}
