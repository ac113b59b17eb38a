/*
** repl_test.c -- Ctrl-C in the mgpu REPL and script runner, driven the way a
** user would: the REPL under a pseudo-terminal (libedit, when installed) and
** with piped stdin.  SIGINT while a statement runs (a Lua loop, a long
** interpreted kernel) reports "interrupted" and the next statement runs;
** SIGINT at the prompt drops the half-typed line; the history file holds
** each line as soon as it is entered, so a killed session keeps it; a
** script stopped by SIGINT exits with 130 and a message.  With libedit, TAB
** completes mgpu's names and an array's methods, and lists several matches.
**
**   repl_test PATH_TO_MGPU
*/
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;
static int has_libedit;   /* the REPL edits lines and keeps history only with libedit */
static char out[1 << 16];
static size_t out_len;

#define EXPECT(c, what) do { if (!(c)) { failures++; fprintf(stderr, "repl_test: FAILED: %s\n", what); } } while (0)

/* Read from fd into `out` until `want` appears after offset `from` or
** `ms` pass; true if it appeared. */
static int wait_for(int fd, size_t from, const char *want, int ms) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    out[out_len] = 0;
    if (strstr(out + from, want)) return 1;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) return 0;
    struct pollfd p = { fd, POLLIN, 0 };
    if (poll(&p, 1, left) <= 0) continue;
    ssize_t n = read(fd, out + out_len, sizeof out - 1 - out_len);
    if (n <= 0) { if (n < 0 && errno == EINTR) continue; out[out_len] = 0; return strstr(out + from, want) != NULL; }
    out_len += (size_t)n;
  }
}

static void say(int fd, const char *s) {
  size_t n = strlen(s);
  if (write(fd, s, n) != (ssize_t)n) perror("repl_test: write");
}

static void pause_ms(int ms) {
  struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&t, NULL);
}

/* The file's contents (static buffer), or "" */
static const char *slurp(const char *path) {
  static char buf[8192];
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return buf;
  size_t n = fread(buf, 1, sizeof buf - 1, f), j = 0;
  fclose(f);
  for (size_t i = 0; i < n; i++) {   /* libedit writes spaces as \040 */
    if (buf[i] == '\\' && i + 3 < n && !memcmp(buf + i + 1, "040", 3)) { buf[j++] = ' '; i += 3; }
    else buf[j++] = buf[i];
  }
  buf[j] = 0;
  return buf;
}

/* A kernel that runs for minutes in the interpreter, then its call. */
static const char long_kernel[] =
  "k = mgpu.kernel{ out_shape = mgpu.shape({1024}, 'f32'), body = function(o) "
  "o:store(mgpu.fori(0, 100000000, function(i, acc) return acc + 1 end, o:load() * 0)) end }\n";

/* The REPL (interpreted, HOME = home) on a new terminal *fd, once it
** prompts; its pid, or -1 (counted as a failure) when it cannot start. */
static pid_t start_repl(const char *mgpu, const char *home, int *fd) {
  pid_t pid = forkpty(fd, NULL, NULL, NULL);
  if (pid < 0) { perror("repl_test: forkpty"); failures++; return -1; }
  if (pid == 0) {
    setenv("HOME", home, 1);
    setenv("MGPU_INTERPRET", "1", 1);
    execl(mgpu, mgpu, (char *)NULL);
    _exit(127);
  }
  EXPECT(wait_for(*fd, 0, "> ", 10000), "the REPL prompts");
  return pid;
}

static void repl_on_pty(const char *mgpu, const char *home) {
  int fd;
  pid_t pid = start_repl(mgpu, home, &fd);
  if (pid < 0) return;
  size_t mark = out_len;
  say(fd, "while true do end\n");
  pause_ms(300);
  kill(pid, SIGINT);
  EXPECT(wait_for(fd, mark, "interrupted", 5000), "SIGINT stops a running Lua loop with \"interrupted\"");
  mark = out_len;
  say(fd, "print('after' .. 40 + 2)\n");
  EXPECT(wait_for(fd, mark, "after42", 5000), "the session goes on after an interrupted statement");
  if (has_libedit)
    EXPECT(strstr(slurp(".mgpu_history"), "while true do end") != NULL, "the history file holds each line at once");

  mark = out_len;
  say(fd, "print('half");
  pause_ms(300);
  kill(pid, SIGINT);
  pause_ms(300);
  say(fd, "print('fresh' .. 1)\n");
  EXPECT(wait_for(fd, mark, "fresh1", 5000), "SIGINT at the prompt drops the half-typed line");

  say(fd, long_kernel);
  mark = out_len;
  say(fd, "r = k()\n");
  pause_ms(1500);
  kill(pid, SIGINT);
  EXPECT(wait_for(fd, mark, "interrupted", 10000), "SIGINT stops a long interpreted kernel");
  mark = out_len;
  say(fd, "print('still' .. 3 * 3)\n");
  EXPECT(wait_for(fd, mark, "still9", 5000), "the session goes on after an interrupted kernel");
  pause_ms(200);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  const char *h = slurp(".mgpu_history");
  if (has_libedit) EXPECT(strstr(h, "still") != NULL && strstr(h, "r = k()") != NULL, "a killed session keeps its history");
  close(fd);
}

/* Tab completion under a terminal (libedit): one match completes the word
** in place, a second TAB lists several, ':' offers an array's methods; the
** results print with their values. */
static void completion_on_pty(const char *mgpu, const char *home) {
  int fd;
  out_len = 0;
  pid_t pid = start_repl(mgpu, home, &fd);
  if (pid < 0) return;
  size_t mark = out_len;
  say(fd, "mgpu.zer\t(3)\n");
  EXPECT(wait_for(fd, mark, "mgpu.array(f32[3], {0, 0, 0})", 5000), "TAB completes mgpu.zer to mgpu.zeros");
  mark = out_len;
  say(fd, "mgpu.empt\t\t");
  EXPECT(wait_for(fd, mark, "mgpu.empty_cache", 5000), "a second TAB lists mgpu.empty and mgpu.empty_cache");
  say(fd, "\025");   /* Ctrl-U: drop the line */
  say(fd, "x = mgpu.iota({2, 3}, 'i32')\n");
  mark = out_len;
  say(fd, "x:tol\t()\n");
  EXPECT(wait_for(fd, mark, "{{0, 1, 2}, {3, 4, 5}}", 5000), "TAB completes an array's method after ':'");
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  close(fd);
}

/* Run mgpu with `args` and stdin from a pipe; returns its stdin's write end. */
static pid_t spawn_piped(const char *mgpu, const char *script, int *in, int *outfd) {
  int pin[2], pout[2];
  if (pipe(pin) || pipe(pout)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pin[0], 0);
    dup2(pout[1], 1);
    dup2(pout[1], 2);
    close(pin[1]);
    close(pout[0]);
    setenv("MGPU_INTERPRET", "1", 1);
    if (script) execl(mgpu, mgpu, script, (char *)NULL);
    else execl(mgpu, mgpu, (char *)NULL);
    _exit(127);
  }
  close(pin[0]);
  close(pout[1]);
  *in = pin[1];
  *outfd = pout[0];
  return pid;
}

static void repl_on_pipe(const char *mgpu) {
  int in, fd;
  out_len = 0;
  pid_t pid = spawn_piped(mgpu, NULL, &in, &fd);
  if (pid < 0) { failures++; return; }
  say(in, "print('ready')\n");
  EXPECT(wait_for(fd, 0, "ready", 10000), "the piped REPL runs a statement");
  size_t mark = out_len;
  say(in, "while true do end\n");
  pause_ms(300);
  kill(pid, SIGINT);
  EXPECT(wait_for(fd, mark, "interrupted", 5000), "piped: SIGINT stops a running statement");
  mark = out_len;
  say(in, "print('piped' .. 7)\n");
  EXPECT(wait_for(fd, mark, "piped7", 5000), "piped: the next statement runs");
  close(in);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "piped: the REPL ends normally at end of input");
  close(fd);
}

static void script_interrupted(const char *mgpu) {
  FILE *f = fopen("loop.lua", "w");
  if (!f) { failures++; return; }
  fputs("print('looping')\nio.stdout:flush()\nlocal x = 0\nwhile true do x = x + 1 end\n", f);
  fclose(f);
  int in, fd;
  out_len = 0;
  pid_t pid = spawn_piped(mgpu, "loop.lua", &in, &fd);
  if (pid < 0) { failures++; return; }
  EXPECT(wait_for(fd, 0, "looping", 10000), "the script starts");
  pause_ms(200);
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  wait_for(fd, 0, "interrupted", 2000);
  EXPECT(strstr(out, "mgpu: loop.lua:4: interrupted") != NULL, "a script stops with file:line: interrupted");
  EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 130, "a script stopped by SIGINT exits with 130");
  close(in);
  close(fd);
}

int main(int argc, char **argv) {
  if (argc < 2) { fputs("usage: repl_test PATH_TO_MGPU\n", stderr); return 2; }
  char mgpu[4096];
  if (!realpath(argv[1], mgpu)) { perror(argv[1]); return 2; }
  char home[] = "/tmp/mgpu_repl_XXXXXX";
  if (!mkdtemp(home) || chdir(home)) { perror("repl_test: temp dir"); return 2; }
  setenv("HOME", home, 1);
  signal(SIGPIPE, SIG_IGN);
  void *edit = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
  has_libedit = edit != NULL;
  if (edit) dlclose(edit);
  repl_on_pty(mgpu, home);
  if (has_libedit) completion_on_pty(mgpu, home);
  repl_on_pipe(mgpu);
  script_interrupted(mgpu);
  if (failures) {
    out[out_len] = 0;
    fprintf(stderr, "repl_test: last output:\n%s\n", out);
  }
  unlink("loop.lua");
  unlink(".mgpu_history");
  rmdir(home);
  printf("repl_test: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
