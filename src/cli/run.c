/* run.c — `sandboxer run`: one command in a fresh sandbox, its report on every outcome. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandboxer/sandboxer.h"
#include "supervise/spawn.h"
#include "verbs.h"

static void help(void) {
        printf("Usage: sandboxer run [OPTIONS] -- COMMAND [ARG]...\n\n"
               "Run COMMAND in a fresh sandbox: no network, read-only system, a private scratch\n"
               "directory (TMPDIR, HOME), hard limits, and a JSON report of what happened.\n\n"
               "Options:\n"
               "  --profile NAME|FILE   profile to use (default: profile.default)\n"
               "  --policy FILE         site policy file (default: /etc/sandboxer/policy.yaml, else built "
               "in)\n"
               "  --backend NAME        auto (default; $SANDBOXER_BACKEND), native, landlock, bwrap,\n"
               "                        firejail, podman, docker, microvm\n"
               "  --mode MODE           balanced (default) or strict\n"
               "  --workspace DIR       host directory shown at the profile's workspace.mount\n"
               "  --cwd DIR             working directory inside (default: the workspace, else scratch)\n"
               "  --env NAME=VALUE      add to the command's environment (repeatable)\n"
               "  --report FILE|-       write the JSON report to FILE, or '-' for stderr at the end\n"
               "  --report-fd N         write the JSON report to descriptor N\n"
               "  --dry-run             print the effective policy with the source of each value, run "
               "nothing\n"
               "  --json                with --dry-run: JSON output\n"
               "  --timeout S, --budget S, --memory MB, --cpus N, --pids N, --output MB, --scratch MB\n"
               "                        per-request limits; refused unless the policy file allows them\n"
               "  -h, --help            this help\n\n"
               "Exit status: COMMAND's own; 128+N if it died by signal N; 124 timeout; 125 sandboxer\n"
               "failed (bad arguments, setup, policy refusal); 126 not executable; 127 not found.\n");
}

enum {
        ARG_PROFILE = 0x100,
        ARG_POLICY,
        ARG_BACKEND,
        ARG_MODE,
        ARG_WORKSPACE,
        ARG_CWD,
        ARG_ENV,
        ARG_REPORT,
        ARG_REPORT_FD,
        ARG_DRY_RUN,
        ARG_JSON,
        ARG_TIMEOUT,
        ARG_BUDGET,
        ARG_MEMORY,
        ARG_CPUS,
        ARG_PIDS,
        ARG_OUTPUT,
        ARG_SCRATCH,
        ARG_TTY,
};

static const struct option options[] = {{"profile", required_argument, NULL, ARG_PROFILE},
        {"policy", required_argument, NULL, ARG_POLICY}, {"backend", required_argument, NULL, ARG_BACKEND},
        {"mode", required_argument, NULL, ARG_MODE}, {"workspace", required_argument, NULL, ARG_WORKSPACE},
        {"cwd", required_argument, NULL, ARG_CWD}, {"env", required_argument, NULL, ARG_ENV},
        {"report", required_argument, NULL, ARG_REPORT},
        {"report-fd", required_argument, NULL, ARG_REPORT_FD}, {"dry-run", no_argument, NULL, ARG_DRY_RUN},
        {"json", no_argument, NULL, ARG_JSON}, {"timeout", required_argument, NULL, ARG_TIMEOUT},
        {"budget", required_argument, NULL, ARG_BUDGET}, {"memory", required_argument, NULL, ARG_MEMORY},
        {"cpus", required_argument, NULL, ARG_CPUS}, {"pids", required_argument, NULL, ARG_PIDS},
        {"output", required_argument, NULL, ARG_OUTPUT}, {"scratch", required_argument, NULL, ARG_SCRATCH},
        {"tty", no_argument, NULL, ARG_TTY}, {"help", no_argument, NULL, 'h'}, {}};

static const char *limit_key(int opt) {
        switch (opt) {
        case ARG_TIMEOUT:
                return "timeout_s";
        case ARG_BUDGET:
                return "budget_s";
        case ARG_MEMORY:
                return "memory_mb";
        case ARG_CPUS:
                return "cpus";
        case ARG_PIDS:
                return "pids";
        case ARG_OUTPUT:
                return "output_mb";
        case ARG_SCRATCH:
                return "scratch_mb";
        default:
                return NULL;
        }
}

static int write_report(const char *json, const char *file, int fd) {
        if (!json)
                return 0;
        size_t n = strlen(json);
        int r = 0;
        if (file) {
                int out = strcmp(file, "-") == 0
                                  ? dup(2)
                                  : open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
                if (out < 0) {
                        cli_error("cannot write the report to %s: %m", file);
                        return -errno;
                }
                if (write(out, json, n) != (ssize_t) n) {
                        cli_error("cannot write the report to %s: %m", file);
                        r = -EIO;
                }
                close(out);
        }
        if (fd >= 0 && write(fd, json, n) != (ssize_t) n) {
                cli_error("cannot write the report to descriptor %d: %m", fd);
                r = -EIO;
        }
        return r;
}

int verb_run(int argc, char **argv) {
        sbx_run *run = sbx_run_new();
        if (!run) {
                cli_error("out of memory");
                return SBX_EXIT_FAILURE;
        }
        const char *report_file = NULL;
        int report_fd = -1;
        bool dry_run = false, json = false;
        char failure[512] = "";
        int c;

        const char *envb = getenv("SANDBOXER_BACKEND");
        if (envb && *envb && sbx_run_set_backend(run, envb) < 0)
                snprintf(failure, sizeof failure,
                        "unknown backend '%s' in $SANDBOXER_BACKEND (expected auto, native, landlock, ...)",
                        envb);

        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0) {
                int r = 0;
                switch (c) {
                case 'h':
                        help();
                        sbx_run_free(run);
                        return 0;
                case ARG_PROFILE:
                        r = sbx_run_set_profile(run, optarg);
                        break;
                case ARG_POLICY:
                        r = sbx_run_set_policy_file(run, optarg);
                        break;
                case ARG_BACKEND:
                        if (sbx_run_set_backend(run, optarg) < 0 && !failure[0])
                                snprintf(failure, sizeof failure,
                                        "--backend: unknown backend '%s' (expected auto, native, landlock, "
                                        "bwrap, firejail, podman, docker or microvm)",
                                        optarg);
                        else if (failure[0] && strstr(failure, "SANDBOXER_BACKEND"))
                                failure[0] = 0; /* the flag wins over the environment */
                        break;
                case ARG_MODE:
                        if (sbx_run_set_mode(run, optarg) < 0 && !failure[0])
                                snprintf(failure, sizeof failure,
                                        "--mode: unknown mode '%s' (expected balanced or strict)", optarg);
                        break;
                case ARG_WORKSPACE:
                        r = sbx_run_set_workspace(run, optarg);
                        break;
                case ARG_CWD:
                        if (optarg[0] != '/' && !failure[0])
                                snprintf(failure, sizeof failure,
                                        "--cwd: '%s' is not an absolute path inside the sandbox", optarg);
                        r = sbx_run_set_cwd(run, optarg);
                        break;
                case ARG_ENV:
                        if (!strchr(optarg, '=') && !failure[0])
                                snprintf(failure, sizeof failure, "--env: expected NAME=VALUE, got '%s'",
                                        optarg);
                        else
                                r = sbx_run_add_env(run, optarg);
                        break;
                case ARG_REPORT:
                        report_file = optarg;
                        break;
                case ARG_REPORT_FD: {
                        char *end;
                        errno = 0;
                        long v = strtol(optarg, &end, 10);
                        if (errno || *end || end == optarg || v < 0 || v > INT_MAX ||
                                fcntl((int) v, F_GETFD) < 0) {
                                if (!failure[0])
                                        snprintf(failure, sizeof failure,
                                                "--report-fd: '%s' is not an open file descriptor", optarg);
                        } else
                                report_fd = (int) v;
                        break;
                }
                case ARG_TTY:
                        r = sbx_run_set_tty(run, true);
                        break;
                case ARG_DRY_RUN:
                        dry_run = true;
                        break;
                case ARG_JSON:
                        json = true;
                        break;
                case ARG_TIMEOUT:
                case ARG_BUDGET:
                case ARG_MEMORY:
                case ARG_CPUS:
                case ARG_PIDS:
                case ARG_OUTPUT:
                case ARG_SCRATCH: {
                        char *end;
                        errno = 0;
                        double v = strtod(optarg, &end);
                        if (errno || *end || end == optarg || !isfinite(v) || v <= 0) {
                                if (!failure[0])
                                        snprintf(failure, sizeof failure,
                                                "--%s: expected a positive number, got '%s'",
                                                options[c - ARG_PROFILE].name, optarg);
                        } else
                                (void) sbx_run_set_limit(run, limit_key(c), v);
                        break;
                }
                case '?':
                default:
                        if (!failure[0]) {
                                if (optopt)
                                        snprintf(failure, sizeof failure,
                                                "unknown or incomplete option '-%c'; see 'sandboxer run "
                                                "--help'",
                                                optopt);
                                else
                                        snprintf(failure, sizeof failure,
                                                "unknown or incomplete option '%s'; see 'sandboxer run "
                                                "--help'",
                                                argv[optind - 1]);
                        }
                        break;
                }
                if (r < 0 && !failure[0])
                        snprintf(failure, sizeof failure, "%s", strerror(-r));
        }

        if (dry_run) {
                int r = failure[0] ? -EINVAL : sbx_run_dry_run(run, stdout, json);
                if (r < 0)
                        cli_error("%s", failure[0] ? failure : sbx_run_error(run));
                sbx_run_free(run);
                return r < 0 ? SBX_EXIT_FAILURE : 0;
        }

        if (!failure[0] && optind >= argc)
                snprintf(failure, sizeof failure,
                        "no command given; usage: sandboxer run [OPTIONS] -- COMMAND [ARG]...");
        if (!failure[0] && sbx_run_set_command(run, argv + optind) < 0)
                snprintf(failure, sizeof failure, "invalid command '%s'", argv[optind]);
        if (failure[0])
                (void) sbx_run_set_failure(run, failure);

        if (!sbx_platform_sandboxes() && !dry_run) {
                const char *allow = getenv("SANDBOXER_ALLOW_UNSANDBOXED");
                if (allow && strcmp(allow, "1") == 0)
                        cli_error("WARNING: SANDBOXER_ALLOW_UNSANDBOXED=1 and this build cannot sandbox: "
                                  "the command "
                                  "runs WITHOUT a sandbox (report: backend none)");
        }
        /* This process has one thread until the sandbox's init runs (the egress proxy's start
         * later): its spawn may share our memory (spawn.c). */
#if HAVE_LINUX
        sbx_spawn_single_threaded(true);
#endif
        int status = sbx_run_execute(run);
        if (status == SBX_EXIT_FAILURE && sbx_run_error(run))
                cli_error("%s", sbx_run_error(run));
        /* the JSON is made only for someone who reads it (--report, --report-fd) */
        if ((report_file || report_fd >= 0) &&
                write_report(sbx_run_report_json(run), report_file, report_fd) < 0 && status == 0)
                status = SBX_EXIT_FAILURE;
        sbx_run_free(run);
        return status;
}
