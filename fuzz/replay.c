/*
** replay.c -- runs a fuzz target once on each file named on the command
** line (directories: every file in them), without libFuzzer: the corpus
** and the crash reproducers become ordinary tests of any build.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "replay: cannot open %s\n", path); return 1; }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap *= 2);
      if (!nb) { free(buf); buf = NULL; }
      else buf = nb;
    }
  }
  fclose(f);
  if (!buf) { fprintf(stderr, "replay: out of memory reading %s\n", path); return 1; }
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

static int run_path(const char *path, int *count) {
  struct stat st;
  if (stat(path, &st)) { fprintf(stderr, "replay: no such file %s\n", path); return 1; }
  if (!S_ISDIR(st.st_mode)) { ++*count; return run_file(path); }
  DIR *d = opendir(path);
  if (!d) { fprintf(stderr, "replay: cannot read %s\n", path); return 1; }
  int bad = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    bad |= run_path(sub, count);
  }
  closedir(d);
  return bad;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  int bad = 0, count = 0;
  for (int i = 1; i < argc; i++) bad |= run_path(argv[i], &count);
  printf("replay: %d inputs%s\n", count, bad ? ", some unreadable" : "");
  return bad;
}
