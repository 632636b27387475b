/* replay-main.c — runs every file of a corpus directory through LLVMFuzzerTestOneInput, as a
 * TAP test: a crash or sanitizer report fails it. Linked instead of libFuzzer's main. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv) {
        struct dirent **names = NULL;
        unsigned n_tests = 0, failed = 0;
        int n;

        if (argc != 2) {
                fprintf(stderr, "Usage: %s CORPUS-DIR\n", argv[0]);
                return 2;
        }
        n = scandir(argv[1], &names, NULL, by_name);
        if (n < 0) {
                printf("1..0 # SKIP cannot read %s\n", argv[1]);
                return 0;
        }
        for (int i = 0; i < n; i++) {
                char path[4096];
                struct stat st;
                FILE *f;

                snprintf(path, sizeof path, "%s/%s", argv[1], names[i]->d_name);
                if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
                        free(names[i]);
                        continue;
                }
                n_tests++;
                f = fopen(path, "re");
                uint8_t *buf = malloc((size_t) st.st_size + 1);
                size_t len = f && buf ? fread(buf, 1, (size_t) st.st_size, f) : 0;
                if (!f || !buf || len != (size_t) st.st_size) {
                        printf("not ok %u - %s (cannot read)\n", n_tests, names[i]->d_name);
                        failed++;
                } else {
                        (void) LLVMFuzzerTestOneInput(buf, len);
                        printf("ok %u - %s\n", n_tests, names[i]->d_name);
                }
                fflush(stdout);
                if (f)
                        fclose(f);
                free(buf);
                free(names[i]);
        }
        free(names);
        printf("1..%u\n", n_tests);
        return failed ? 1 : 0;
}
