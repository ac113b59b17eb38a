/*
** test_main.c -- runs every C unit test.
*/
#include <stdlib.h>

#include "test.h"

int test_failed, test_checks;

static const test_case cases[] = {
#define CASE(n) { #n, test_##n },
  TESTS(CASE)
#undef CASE
};

int main(int argc, char **argv) {
  int ran = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name)) continue;
    int before = test_failed;
    cases[i].fn();
    ran++;
    printf("%-24s %s\n", cases[i].name, test_failed == before ? "ok" : "FAILED");
  }
  printf("%d passed, %d failed (%d checks in %d tests)\n", test_checks - test_failed, test_failed, test_checks, ran);
  return test_failed ? 1 : 0;
}
