/*
 * files.c: atomic output files and the search for shipped data files.
 */
#include "podplan/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

static bool readable(const char *path) { return access(path, R_OK) == 0; }

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
    const char *env = getenv("PODPLAN_DATA_DIR");
    const char *roots[] = {env, PODPLAN_SOURCE_DIR, PODPLAN_DATA_INSTALL_DIR};
    const char *ext = strstr(name, ".yaml") ? "" : ".yaml";
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        if (!roots[i] || !*roots[i]) continue;
        snprintf(buf, len, "%s/%s/%s%s", roots[i], subdir, name, ext);
        if (readable(buf)) return 0;
    }
    return pp_error_set(e, PP_ENOENT,
                        "\"%s\" is neither a file nor a name in %s/ "
                        "(see `ls %s/%s`)",
                        name, subdir, PODPLAN_SOURCE_DIR, subdir);
}
