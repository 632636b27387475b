/* profile.c — `sandboxer profile validate|list|show`: check profile files (errors as
 * FILE:LINE:COLUMN: message), list the built-in and installed profiles, show one merged. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/jsonw.h"
#include "basic/strv.h"
#include "policy/policy.h"
#include "verbs.h"

static void help_main(FILE *f) {
        fprintf(f, "Usage: sandboxer profile validate [--policy FILE] FILE...\n"
                   "       sandboxer profile list [--json]\n"
                   "       sandboxer profile show NAME|FILE [--json]\n\n"
                   "Profiles are named, versioned sandbox recipes (YAML). Built-ins are compiled in;\n"
                   "more are found as ID.yaml in $SANDBOXER_PROFILE_PATH (colon separated) and\n"
                   "/etc/sandboxer/profiles, which take precedence over a built-in of the same id.\n\n"
                   "  validate   check files (extends resolved); errors as FILE:LINE:COLUMN: message\n"
                   "  list       the profiles found, with version and origin\n"
                   "  show       one profile merged with what it extends, as YAML or JSON\n\n"
                   "'sandboxer profile VERB --help' describes each.\n");
}

static void help_validate(void) {
        printf("Usage: sandboxer profile validate [--policy FILE] FILE...\n\n"
               "Parse each profile FILE, resolve its extends chain and check every value. Prints\n"
               "'FILE: ok' per valid file; errors go to stderr as FILE:LINE:COLUMN: message.\n\n"
               "  --policy FILE   also check the profile only narrows this policy file (limits within\n"
               "                  its ceilings, filesystem.write and network.egress allowed by it)\n"
               "  -h, --help      this help\n\n"
               "Exit status: 0 all valid, 1 any invalid, 125 usage error.\n");
}

static void help_list(void) {
        printf("Usage: sandboxer profile list [--json]\n\n"
               "List the built-in profiles and every *.yaml in the search path ($SANDBOXER_PROFILE_PATH,\n"
               "then /etc/sandboxer/profiles) with id, version and where it comes from.\n\n"
               "  --json       one JSON object {\"profiles\": [...]}\n"
               "  -h, --help   this help\n");
}

static void help_show(void) {
        printf("Usage: sandboxer profile show NAME|FILE [--json]\n\n"
               "Print the profile NAME (a built-in or installed id) or FILE merged with everything it\n"
               "extends: every field with its effective value, as YAML that validates again, or JSON.\n\n"
               "  --json       JSON output\n"
               "  -h, --help   this help\n");
}

/* Parse "[--json] [--policy FILE] [-h]" options; returns -1 to exit with *ret_exit. */
static int parse_opts(int argc, char **argv, bool allow_policy, void (*help)(void), bool *json,
        const char **policy, int *ret_exit) {
        static const struct option options[] = {
                {"json", no_argument, NULL, 'j'},
                {"policy", required_argument, NULL, 'p'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        int c;

        optind = 0; /* full re-initialisation: main or another verb may have used getopt */
        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        *ret_exit = 0;
                        return -1;
                case 'j':
                        if (!json)
                                goto unknown;
                        *json = true;
                        break;
                case 'p':
                        if (!allow_policy)
                                goto unknown;
                        *policy = optarg;
                        break;
                case '?':
                default:
                unknown:
                        cli_error("profile %s: unknown or incomplete option '%s'; see 'sandboxer profile %s "
                                  "--help'",
                                argv[0], argv[optind - 1], argv[0]);
                        *ret_exit = SBX_EXIT_FAILURE;
                        return -1;
                }
        return 0;
}

static void print_error(const char *arg, const sbx_error *e) {
        char buf[1200];

        if (e->file[0])
                fprintf(stderr, "%s:%u:%u: %s\n", e->file, e->line, e->column, e->message);
        else if (strstr(e->message, arg))
                cli_error("%s", sbx_error_format(e, buf, sizeof buf));
        else
                cli_error("%s: %s", arg, sbx_error_format(e, buf, sizeof buf));
}

/* A bare name that exists as a file ("myprofile") is a file for validate, not an id. */
static char *as_file(const char *arg) {
        char *s = NULL;

        size_t n = strlen(arg);
        bool suffix = (n > 5 && streq(arg + n - 5, ".yaml")) || (n > 4 && streq(arg + n - 4, ".yml"));

        if (!strchr(arg, '/') && !suffix && access(arg, F_OK) == 0) {
                if (asprintf(&s, "./%s", arg) < 0)
                        return NULL;
                return s;
        }
        return strdup(arg);
}

static int verb_validate(int argc, char **argv) {
        _cleanup_(sbx_policy_freep) sbx_policy *pol = NULL;
        const char *policy = NULL;
        int r, ex = 0;

        if (parse_opts(argc, argv, true, help_validate, NULL, &policy, &ex) < 0)
                return ex;
        if (optind >= argc) {
                cli_error("profile validate: no FILE given; see 'sandboxer profile validate --help'");
                return SBX_EXIT_FAILURE;
        }
        if (policy) {
                sbx_error e = {};
                r = sbx_policy_load(policy, &pol, &e);
                if (r < 0) {
                        print_error(policy, &e);
                        cli_error("profile validate: the policy file %s is invalid", policy);
                        return SBX_EXIT_FAILURE;
                }
        }
        for (int i = optind; i < argc; i++) {
                _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
                _cleanup_free_ char *file = as_file(argv[i]);
                sbx_error e = {};

                if (!file) {
                        cli_error("out of memory");
                        return SBX_EXIT_FAILURE;
                }
                r = sbx_profile_load(file, &p, &e);
                if (r >= 0 && pol)
                        r = sbx_policy_check_profile(pol, p, p->mode, &e);
                if (r < 0) {
                        print_error(argv[i], &e);
                        ex = 1;
                } else
                        printf("%s: ok\n", argv[i]);
        }
        fflush(stdout);
        return ex;
}

static void json_str(const char *s) {
        (void) json_fputs(stdout, s);
}

typedef struct entry {
        char *id, *version, *source, *extends, *error, *note;
} entry;

static void entry_print(const entry *en, bool json, bool first) {
        if (json) {
                fputs(first ? "\n  {\"id\": " : ",\n  {\"id\": ", stdout);
                json_str(en->id);
                fputs(", \"version\": ", stdout);
                json_str(en->version);
                fputs(", \"source\": ", stdout);
                json_str(en->source);
                fputs(", \"extends\": ", stdout);
                json_str(en->extends);
                fputs(", \"error\": ", stdout);
                json_str(en->error);
                fputs(", \"note\": ", stdout);
                json_str(en->note);
                putchar('}');
                return;
        }
        printf("%-24s %-9s %s", en->id ? en->id : "-", en->version ? en->version : "-", en->source);
        if (en->error)
                printf("  (invalid: %s)", en->error);
        if (en->note)
                printf("  (%s)", en->note);
        putchar('\n');
}

static void entry_done(entry *en) {
        free(en->id);
        free(en->version);
        free(en->source);
        free(en->extends);
        free(en->error);
        free(en->note);
}

static bool has_yaml_suffix(const char *name) {
        size_t n = strlen(name);
        return (n > 5 && streq(name + n - 5, ".yaml")) || (n > 4 && streq(name + n - 4, ".yml"));
}

static int verb_list(int argc, char **argv) {
        _cleanup_strv_free_ char **dirs = NULL, **seen_ids = NULL;
        bool json = false, first = true;
        int r, ex = 0;

        if (parse_opts(argc, argv, false, help_list, &json, NULL, &ex) < 0)
                return ex;
        if (optind < argc) {
                cli_error("profile list: unexpected argument '%s'; see 'sandboxer profile list --help'",
                        argv[optind]);
                return SBX_EXIT_FAILURE;
        }
        r = sbx_profile_search_path(&dirs);
        if (r < 0) {
                cli_error("out of memory");
                return SBX_EXIT_FAILURE;
        }
        if (json)
                fputs("{\"profiles\": [", stdout);
        else
                printf("%-24s %-9s %s\n", "ID", "VERSION", "SOURCE");

        /* installed profiles first: they win over built-ins of the same id */
        STRV_FOREACH(d, dirs) {
                struct dirent **names = NULL;
                int n = scandir(*d, &names, NULL, alphasort);
                for (int i = 0; i < n; i++) {
                        entry en = {};
                        if (has_yaml_suffix(names[i]->d_name) &&
                                asprintf(&en.source, "%s/%s", *d, names[i]->d_name) >= 0) {
                                _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
                                sbx_error e = {};
                                char buf[1200];
                                size_t stem = strlen(names[i]->d_name) -
                                              (strstr(names[i]->d_name, ".yml") ? 4 : 5);

                                if (sbx_profile_load(en.source, &p, &e) < 0)
                                        en.error = strdup(sbx_error_format(&e, buf, sizeof buf));
                                else {
                                        en.id = strdup(p->id);
                                        en.version = strdup(p->version);
                                        en.extends = p->extends ? strdup(p->extends) : NULL;
                                        if (strlen(p->id) != stem ||
                                                strncmp(p->id, names[i]->d_name, stem) != 0)
                                                en.note = strdup(
                                                        "not found by id: the file should be named ID.yaml");
                                        else if (strv_contains(seen_ids, p->id))
                                                en.note = strdup("shadowed by an earlier directory");
                                        else {
                                                if (sbx_builtin_profile_text(p->id))
                                                        en.note = strdup("overrides the built-in");
                                                (void) strv_extend(&seen_ids, p->id);
                                        }
                                }
                                entry_print(&en, json, first);
                                first = false;
                        }
                        entry_done(&en);
                        free(names[i]);
                }
                free(names);
        }
        for (const char *const *id = sbx_builtin_profile_ids(); *id; id++) {
                _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
                entry en = {};
                sbx_error e = {};
                char buf[1200];

                if (asprintf(&en.source, "builtin:%s", *id) < 0)
                        continue;
                if (sbx_profile_parse(sbx_builtin_profile_text(*id), strlen(sbx_builtin_profile_text(*id)),
                            en.source, &p, &e) < 0) {
                        en.id = strdup(*id);
                        en.error = strdup(sbx_error_format(&e, buf, sizeof buf));
                } else {
                        en.id = strdup(p->id);
                        en.version = strdup(p->version);
                        en.extends = p->extends ? strdup(p->extends) : NULL;
                        if (strv_contains(seen_ids, p->id))
                                en.note = strdup("overridden by an installed profile");
                }
                entry_print(&en, json, first);
                first = false;
                entry_done(&en);
        }
        if (json)
                fputs("\n]}\n", stdout);
        fflush(stdout);
        return ex;
}

static int verb_show(int argc, char **argv) {
        _cleanup_(sbx_profile_freep) sbx_profile *p = NULL;
        sbx_error e = {};
        bool json = false;
        int r, ex = 0;

        if (parse_opts(argc, argv, false, help_show, &json, NULL, &ex) < 0)
                return ex;
        if (optind + 1 != argc) {
                cli_error("profile show: expected exactly one NAME or FILE; see 'sandboxer profile show "
                          "--help'");
                return SBX_EXIT_FAILURE;
        }
        r = sbx_profile_load(argv[optind], &p, &e);
        if (r < 0) {
                print_error(argv[optind], &e);
                return 1;
        }
        r = sbx_profile_dump(p, json, stdout);
        if (r < 0) {
                cli_error("profile show: cannot write the output: %s", strerror(-r));
                return SBX_EXIT_FAILURE;
        }
        return 0;
}

int verb_profile(int argc, char **argv) {
        if (argc < 2) {
                help_main(stderr);
                return SBX_EXIT_FAILURE;
        }
        if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
                help_main(stdout);
                return 0;
        }
        if (streq(argv[1], "validate"))
                return verb_validate(argc - 1, argv + 1);
        if (streq(argv[1], "list"))
                return verb_list(argc - 1, argv + 1);
        if (streq(argv[1], "show"))
                return verb_show(argc - 1, argv + 1);
        cli_error("profile: unknown command '%s' (expected validate, list or show); see 'sandboxer profile "
                  "--help'",
                argv[1]);
        return SBX_EXIT_FAILURE;
}
