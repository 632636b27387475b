/* skill.c — `sandboxer skill keygen|sign|verify|run` (DESIGN.md, "Signed skills"): Ed25519 keys,
 * a skill directory's manifest signed with its files' hashes, verified against the policy's
 * trusted keys before anything runs; a run under profile.skill narrowed by the manifest, on a
 * private copy of exactly the bytes that were verified. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sandboxer/sandboxer.h>

#include "basic/jsonw.h"
#include "basic/rm-rf.h"
#include "basic/strv.h"
#include "daemon/skill.h"
#include "policy/policy.h"
#include "verbs.h"

static void help(void) {
        printf("sandboxer skill keygen --out KEY [--json]\n"
               "sandboxer skill sign DIR --key KEY [--json]\n"
               "sandboxer skill verify DIR [--policy FILE] [--json]\n"
               "sandboxer skill run DIR [--policy FILE] [--backend B] [--report FILE|-] [-- ARG...]\n\n"
               "A skill is a directory with a skill.yaml manifest (name, version, entrypoint, files,\n"
               "sandbox, signature): every file named with its sha256, signed with Ed25519 over the\n"
               "canonical JSON of the rest (docs/skills.md).\n\n"
               "  keygen   a key pair: KEY (secret, mode 0600) and KEY.pub (what a policy trusts)\n"
               "  sign     list DIR's files with their hashes in the manifest and sign it with KEY\n"
               "           (skill.yaml is written back as sandboxer writes YAML: comments go)\n"
               "  verify   check the signature against the policy's skills.trusted_keys and every\n"
               "           file against its hash: a changed, missing or extra file, an untrusted or\n"
               "           bad signature, an unsigned skill where a signature is required: exit 125,\n"
               "           naming it\n"
               "  run      verify, then run the entrypoint (with ARGs) under profile.skill narrowed by\n"
               "           the manifest's sandbox section (it may narrow anything, and open egress\n"
               "           only to allowed_hosts the policy allows; on_violation: kill), in a private\n"
               "           copy of the verified files mounted read-only at /workspace; the report\n"
               "           names the skill (name, version, digest, key_id)\n\n"
               "  --out KEY         where keygen writes the secret key (never overwritten)\n"
               "  --key KEY         the secret key sign uses\n"
               "  --policy FILE     the site policy (default /etc/sandboxer/policy.yaml, else built in)\n"
               "  --backend B       run: the backend (as 'sandboxer run --backend')\n"
               "  --report FILE|-   run: the report (JSON) to FILE, or to stderr\n"
               "  --json            keygen, sign, verify: machine-readable output\n"
               "Exit status: 0 done (run: the entrypoint's status, as 'sandboxer run'), 125 refused\n"
               "or failed (the message says why).\n");
}

static int print_skill(const sbx_skill *s, bool json, const char *what, const char *extra) {
        if (!json) {
                printf("%s: %s %s (digest %s)%s%s%s, %zu file%s\n", what, s->name, s->version, s->digest,
                        s->key_id[0] ? ", signed by key " : ", unsigned", s->key_id, extra ? extra : "",
                        strv_length(s->files), strv_length(s->files) == 1 ? "" : "s");
                return 0;
        }
        _cleanup_jsonw_ jsonw w;
        jsonw_init(&w, true);
        jsonw_begin_object(&w);
        jsonw_kv_string(&w, "name", s->name);
        jsonw_kv_string(&w, "version", s->version);
        jsonw_kv_string(&w, "digest", s->digest);
        jsonw_kv_string(&w, "key_id", s->key_id[0] ? s->key_id : NULL);
        jsonw_kv_uint(&w, "files", strv_length(s->files));
        jsonw_end_object(&w);
        _cleanup_free_ char *text = NULL;
        if (jsonw_finish(&w, true, &text, NULL) < 0)
                return SBX_EXIT_FAILURE;
        fputs(text, stdout);
        return 0;
}

static int fail(const sbx_error *e) {
        if (e->file[0] && e->line)
                cli_error("%s:%u:%u: %s", e->file, e->line, e->column, e->message);
        else
                cli_error("skill: %s", e->message[0] ? e->message : "failed");
        return SBX_EXIT_FAILURE;
}

/* The policy's trusted keys, and whether a signature is required. */
static int policy_keys(const char *policy_file, sbx_policy **ret, sbx_error *e) {
        return sbx_policy_load(policy_file, ret, e);
}

static int do_run(
        const char *dir, const char *policy_file, const char *backend, const char *report, char **args) {
        sbx_error e = {0};
        _cleanup_(sbx_policy_freep) sbx_policy *pol = NULL;
        if (policy_keys(policy_file, &pol, &e) < 0)
                return fail(&e);
        char tmpl[] = "/tmp/sandboxer-skill.XXXXXX";
        if (!mkdtemp(tmpl)) {
                cli_error("skill: cannot make a private directory in /tmp: %m");
                return SBX_EXIT_FAILURE;
        }
        char staging[sizeof tmpl + 16], profile[sizeof tmpl + 32];
        snprintf(staging, sizeof staging, "%s/skill", tmpl);
        snprintf(profile, sizeof profile, "%s/profile.yaml", tmpl);
        int status = SBX_EXIT_FAILURE;
        _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
        _cleanup_(sbx_profile_freep) sbx_profile *base = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        /* the sandbox's user (the policy's run_as when root) reads the copy */
        if (chmod(tmpl, 0755) < 0 || mkdir(staging, 0755) < 0) {
                cli_error("skill: %s: %m", tmpl);
                goto out;
        }
        if (sbx_skill_verify(dir, pol->skill_keys, !pol->skill_unsigned_ok, staging, &s, &e) < 0) {
                fail(&e);
                goto out;
        }
        if (sbx_profile_load("profile.skill", &base, &e) < 0) {
                fail(&e);
                goto out;
        }
        double mem = base->limits.set[SBX_LIMIT_MEMORY_MB]
                             ? base->limits.value[SBX_LIMIT_MEMORY_MB]
                             : pol->mode_limits[SBX_MODE_BALANCED].value[SBX_LIMIT_MEMORY_MB];
        double tmo = base->limits.set[SBX_LIMIT_TIMEOUT_S]
                             ? base->limits.value[SBX_LIMIT_TIMEOUT_S]
                             : pol->mode_limits[SBX_MODE_BALANCED].value[SBX_LIMIT_TIMEOUT_S];
        if (sbx_skill_profile(s, mem, tmo, &text, &e) < 0) {
                fail(&e);
                goto out;
        }
        FILE *f = fopen(profile, "wxe");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
                cli_error("skill: %s: %m", profile);
                goto out;
        }
        for (char **lists[] = {s->entrypoint, args}, ***l = lists; l < lists + 2; l++)
                STRV_FOREACH(a, *l)
                        if (strv_extend(&argv, *a) < 0) {
                                cli_error("skill: out of memory");
                                goto out;
                        }
        sbx_run *run = sbx_run_new();
        if (!run) {
                cli_error("skill: out of memory");
                goto out;
        }
        int r = sbx_run_set_profile(run, profile);
        if (r >= 0 && policy_file)
                r = sbx_run_set_policy_file(run, policy_file);
        if (r >= 0 && backend && sbx_run_set_backend(run, backend) < 0)
                (void) sbx_run_set_failure(run, "--backend: unknown backend");
        if (r >= 0)
                r = sbx_run_set_workspace(run, staging);
        if (r >= 0)
                r = sbx_run_set_command(run, argv);
        if (r >= 0)
                r = sbx_run_set_skill(run, s->name, s->version, s->digest, s->key_id[0] ? s->key_id : NULL);
        if (r < 0)
                (void) sbx_run_set_failure(run, strerror(-r));
        status = sbx_run_execute(run);
        if (status == SBX_EXIT_FAILURE && sbx_run_error(run))
                cli_error("%s", sbx_run_error(run));
        const char *json = sbx_run_report_json(run);
        if (report && json) {
                FILE *rf = streq(report, "-") ? stderr : fopen(report, "we");
                if (!rf || fputs(json, rf) < 0 || (rf != stderr && fclose(rf) != 0)) {
                        cli_error("skill: --report %s: %m", report);
                        if (status == 0)
                                status = SBX_EXIT_FAILURE;
                }
        }
        sbx_run_free(run);
out:
        (void) sbx_rm_rf(tmpl);
        return status;
}

int verb_skill(int argc, char **argv) {
        enum { ARG_OUT = 0x100, ARG_KEY, ARG_POLICY, ARG_BACKEND, ARG_REPORT, ARG_JSON };
        static const struct option options[] = {{"out", required_argument, NULL, ARG_OUT},
                {"key", required_argument, NULL, ARG_KEY}, {"policy", required_argument, NULL, ARG_POLICY},
                {"backend", required_argument, NULL, ARG_BACKEND},
                {"report", required_argument, NULL, ARG_REPORT}, {"json", no_argument, NULL, ARG_JSON},
                {"help", no_argument, NULL, 'h'}, {}};
        const char *out = NULL, *key = NULL, *policy = NULL, *backend = NULL, *report = NULL;
        bool json = false;
        int c;
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                help();
                return argc < 2 ? SBX_EXIT_FAILURE : 0;
        }
        const char *sub = argv[1];
        opterr = 0;
        optind = 2;
        /* options before and after DIR; what follows "--" is run's (getopt puts DIR first) */
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_OUT:
                        out = optarg;
                        break;
                case ARG_KEY:
                        key = optarg;
                        break;
                case ARG_POLICY:
                        policy = optarg;
                        break;
                case ARG_BACKEND:
                        backend = optarg;
                        break;
                case ARG_REPORT:
                        report = optarg;
                        break;
                case ARG_JSON:
                        json = true;
                        break;
                default:
                        cli_error("skill: unknown or incomplete option '%s'; see 'sandboxer skill --help'",
                                argv[optind - 1]);
                        return SBX_EXIT_FAILURE;
                }
        const char *dir = optind < argc ? argv[optind++] : NULL;
        char **rest = argv + optind;
        sbx_error e = {0};

        if (streq(sub, "keygen")) {
                if (!out || dir) {
                        cli_error("skill keygen: usage: sandboxer skill keygen --out KEY");
                        return SBX_EXIT_FAILURE;
                }
                char id[17];
                if (sbx_skill_keygen(out, id, &e) < 0)
                        return fail(&e);
                if (json)
                        printf("{\n  \"key_id\": \"%s\",\n  \"secret\": \"%s\",\n  \"public\": "
                               "\"%s.pub\"\n}\n",
                                id, out, out);
                else
                        printf("key %s: secret %s (keep it), public %s.pub (trust it in the policy's "
                               "skills.trusted_keys)\n",
                                id, out, out);
                return 0;
        }
        if (!dir) {
                cli_error("skill %s: which skill directory? see 'sandboxer skill --help'", sub);
                return SBX_EXIT_FAILURE;
        }
        if (!streq(sub, "run") && *rest) {
                cli_error("skill %s: unexpected argument '%s'", sub, *rest);
                return SBX_EXIT_FAILURE;
        }
        if (streq(sub, "sign")) {
                if (!key) {
                        cli_error("skill sign: --key KEY is required (make one with 'sandboxer skill "
                                  "keygen')");
                        return SBX_EXIT_FAILURE;
                }
                _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
                if (sbx_skill_sign(dir, key, &s, &e) < 0)
                        return fail(&e);
                return print_skill(s, json, "signed", NULL);
        }
        if (streq(sub, "verify")) {
                _cleanup_(sbx_policy_freep) sbx_policy *pol = NULL;
                _cleanup_(sbx_skill_freep) sbx_skill *s = NULL;
                if (policy_keys(policy, &pol, &e) < 0 ||
                        sbx_skill_verify(dir, pol->skill_keys, !pol->skill_unsigned_ok, NULL, &s, &e) < 0)
                        return fail(&e);
                return print_skill(s, json, "verified", NULL);
        }
        if (streq(sub, "run"))
                return do_run(dir, policy, backend, report, rest);
        cli_error("skill: unknown command '%s' (expected keygen, sign, verify or run)", sub);
        return SBX_EXIT_FAILURE;
}
