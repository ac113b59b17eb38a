/*
** repl.c -- the interactive loop, after lua.c: each line is tried as an
** expression first (so `1+1` prints 2), a statement left open at <eof>
** continues on the next line, and errors are reported without ending the
** session.  Results print as lua/mgpu/repl.lua words them (arrays with
** their elements, tables with their contents), and `help NAME` prints the
** API reference's entry.  Line editing, history and tab completion come
** from libedit when the system has it (loaded at run time; without it
** lines are read plainly); the history file is rewritten after every
** line, so a killed session keeps it.  Ctrl-C abandons the line being
** typed, or interrupts the running statement.
*/
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "cli.h"

/* The REPL's Lua side (mgpu.repl): a registry reference to its table, or
** LUA_NOREF when it did not load (results then print with print).  One
** REPL runs per process: the completion callback finds its state here. */
static int repl_ref = LUA_NOREF;
static lua_State *repl_L;

/* Push mgpu.repl's function `name`; false, with nothing pushed, without it. */
static int repl_fn(lua_State *L, const char *name) {
  if (repl_ref == LUA_NOREF) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, repl_ref);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
  if (lua_isfunction(L, -1)) return 1;
  lua_pop(L, 1);
  return 0;
}

/* The list at stack index t as readline wants matches: malloc'd strings,
** the longest common prefix first (the one match alone when there is
** one), NULL-terminated; NULL when empty or out of memory. */
static char **match_list(lua_State *L, int t) {
  size_t n = lua_rawlen(L, t), common = SIZE_MAX;
  if (n == 0) return NULL;
  char **m = calloc(n + 2, sizeof *m);
  if (!m) return NULL;
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, t, (lua_Integer)i);
    const char *w = lua_tostring(L, -1);
    m[i] = strdup(w ? w : "");
    lua_pop(L, 1);
    if (!m[i]) { while (i > 1) free(m[--i]); free(m); return NULL; }
    size_t k = 0;
    while (k < common && m[1][k] && m[1][k] == m[i][k]) k++;
    common = k;
  }
  if (n == 1) { m[0] = m[1]; m[1] = NULL; return m; }
  m[0] = strndup(m[1], common);
  if (!m[0]) { for (size_t i = 1; i <= n; i++) free(m[i]); free(m); return NULL; }
  return m;
}

static int *completion_over;   /* libedit's rl_attempted_completion_over */

/* libedit's completion of the word before the cursor: mgpu.repl.complete's
** words (never file names).  Ctrl-C waits until the Lua call is done. */
static char **complete(const char *text, int start, int end) {
  if (completion_over) *completion_over = 1;
  lua_State *L = repl_L;
  int top = lua_gettop(L);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, &old);
  char **m = NULL;
  if (repl_fn(L, "complete")) {
    lua_pushstring(L, text);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) m = match_list(L, lua_gettop(L));
  }
  lua_settop(L, top);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return m;
}

typedef struct editor {
  char *(*readline)(const char *);
  int (*add_history)(const char *);
  int (*read_history)(const char *);
  int (*write_history)(const char *);
  char history[1024];
} editor;

static void editor_open(editor *ed) {
  memset(ed, 0, sizeof *ed);
  if (!isatty(0)) return;
  void *h = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  *(void **)&ed->readline = dlsym(h, "readline");
  *(void **)&ed->add_history = dlsym(h, "add_history");
  *(void **)&ed->read_history = dlsym(h, "read_history");
  *(void **)&ed->write_history = dlsym(h, "write_history");
  if (!ed->readline || !ed->add_history) { ed->readline = NULL; return; }
  int *catch_signals = dlsym(h, "rl_catch_signals");   /* Ctrl-C is ours (cli_sigint_readline) */
  if (catch_signals) *catch_signals = 0;
  /* tab completion: words run across '.' and ':' (mgpu.zeros, x:tolist), nothing appended */
  char **(**attempted)(const char *, int, int) = dlsym(h, "rl_attempted_completion_function");
  const char **breaks = dlsym(h, "rl_basic_word_break_characters");
  int *append = dlsym(h, "rl_completion_append_character");
  completion_over = dlsym(h, "rl_attempted_completion_over");
  if (attempted) *attempted = complete;
  if (breaks) *breaks = " \t\n\"'`@$><=;|&{}()[],+-*/%^#~";
  if (append) *append = 0;
  const char *home = getenv("HOME");
  if (home && ed->read_history) {
    snprintf(ed->history, sizeof ed->history, "%s/.mgpu_history", home);
    ed->read_history(ed->history);
  }
}

/* Remember a line: in libedit's history and, at once, in the history file. */
static void remember(editor *ed, const char *line) {
  if (!*line || !ed->readline) return;
  ed->add_history(line);
  if (ed->history[0] && ed->write_history) ed->write_history(ed->history);
}

/* libedit's readline, abandoned on Ctrl-C (*interrupted set, NULL). */
static char *edit_line(editor *ed, const char *prompt, int *interrupted) {
  sigjmp_buf jb;
  if (sigsetjmp(jb, 1)) {
    cli_sigint_readline(NULL, 0);
    fputs("\n", stdout);
    fflush(stdout);
    *interrupted = 1;
    return NULL;
  }
  cli_sigint_readline(&jb, 1);
  char *line = ed->readline(prompt);
  cli_sigint_readline(NULL, 0);
  return line;
}

/* One line without its newline, or NULL at end of input or on Ctrl-C
** (*interrupted set).  Caller frees. */
static char *read_line(editor *ed, const char *prompt, int *interrupted) {
  *interrupted = 0;
  if (ed->readline) return edit_line(ed, prompt, interrupted);
  if (isatty(0)) { fputs(prompt, stdout); fflush(stdout); }
  size_t cap = 256, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  int c;
  while ((c = getchar()) != EOF && c != '\n') {
    if (len + 1 >= cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) { free(buf); return NULL; }
      buf = nb;
    }
    buf[len++] = (char)c;
  }
  if (c == EOF && ferror(stdin) && errno == EINTR && cli_sigint_take()) {   /* Ctrl-C: drop the line */
    clearerr(stdin);
    if (isatty(0)) fputs("\n", stdout);
    free(buf);
    *interrupted = 1;
    return NULL;
  }
  if (c == EOF && len == 0) { free(buf); return NULL; }
  buf[len] = 0;
  return buf;
}

/* Is the syntax error on the stack an unfinished statement? */
static int incomplete(lua_State *L, int status) {
  if (status != LUA_ERRSYNTAX) return 0;
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  const char *eof = "<eof>";
  size_t el = strlen(eof);
  if (len >= el && strcmp(msg + len - el, eof) == 0) { lua_pop(L, 1); return 1; }
  return 0;
}

/* Compile `code` as an expression list (its values get printed); the calls
** are arguments of select, not a tail call, so errors keep their line. */
static int load_expr(lua_State *L, const char *code) {
  const char *src = lua_pushfstring(L, "return select(1, %s\n);", code);
  int status = luaL_loadbuffer(L, src, strlen(src), "=stdin");
  lua_remove(L, -2);
  return status;
}

/* Compile the input, reading more lines while it is an unfinished
** statement.  Leaves the chunk (or an error message) on the stack; returns
** the status, -1 at end of input, or -2 when Ctrl-C dropped the input. */
static int load_input(lua_State *L, editor *ed) {
  int interrupted;
  char *line = read_line(ed, "> ", &interrupted);
  if (!line) return interrupted ? -2 : -1;
  remember(ed, line);
  lua_pushstring(L, line);
  free(line);
  if (repl_fn(L, "command")) {   /* `help NAME` -> mgpu.help("NAME") */
    lua_pushvalue(L, -2);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_isstring(L, -1)) lua_replace(L, -2);
    else lua_pop(L, 1);
  }
  for (;;) {
    const char *code = lua_tostring(L, -1);
    if (load_expr(L, code) == LUA_OK) { lua_remove(L, -2); return LUA_OK; }
    lua_pop(L, 1);
    int status = luaL_loadbuffer(L, code, strlen(code), "=stdin");
    if (!incomplete(L, status)) { lua_remove(L, -2); return status; }
    char *more = read_line(ed, ">> ", &interrupted);
    if (!more) { lua_pop(L, 1); return interrupted ? -2 : -1; }
    remember(ed, more);
    lua_pushliteral(L, "\n");
    lua_pushstring(L, more);
    free(more);
    lua_concat(L, 3);
  }
}

/* After a statement: a GPU context lost to a kernel's fault or timeout is
** replaced by a fresh one (mgpu.context.recover), which is said on stderr. */
static void recover_gpu(lua_State *L) {
  static const char code[] = "local c = package.loaded['mgpu.context']; return c and c.recover()";
  if (luaL_loadstring(L, code) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    cli_report(lua_tostring(L, -1));
  } else if (lua_isstring(L, -1)) {
    fprintf(stderr, "mgpu: %s\n", lua_tostring(L, -1));
  }
  lua_pop(L, 1);
}

/* Print the results on the stack as mgpu.repl.show words them (or with
** print without it); leaves the stack empty. */
static void print_results(lua_State *L) {
  int n = lua_gettop(L);
  if (repl_fn(L, "show")) {
    lua_insert(L, 1);
    if (cli_docall(L, n, 1) == LUA_OK) {
      size_t len;
      const char *text = lua_tolstring(L, -1, &len);
      if (text) { fwrite(text, 1, len, stdout); fputc('\n', stdout); fflush(stdout); }
    }
  } else {
    lua_getglobal(L, "print");
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK) cli_report(lua_tostring(L, -1));
  }
  lua_settop(L, 0);
}

/* Load mgpu.repl for results, completion and help (reported when it
** fails), and start it (the global `help`). */
static void repl_load(lua_State *L) {
  repl_L = L;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mgpu.repl");
  if (cli_docall(L, 1, 1) != LUA_OK) return;
  if (lua_istable(L, -1)) repl_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  else lua_pop(L, 1);
  if (repl_fn(L, "start")) cli_docall(L, 0, 0);
}

void cli_repl(lua_State *L) {
  editor ed;
  repl_load(L);
  editor_open(&ed);
  cli_sigint_install(L, 1);
  for (;;) {
    cli_sigint_clear(L);
    int status = load_input(L, &ed);
    if (status == -1) break;
    if (status == -2) continue;
    cli_sigint_clear(L);   /* a Ctrl-C before the statement starts is not for it */
    if (status == LUA_OK) status = cli_docall(L, 0, LUA_MULTRET);
    else { cli_report(lua_tostring(L, -1)); lua_pop(L, 1); }
    if (status == LUA_OK && lua_gettop(L) > 0) print_results(L);
    lua_settop(L, 0);
    recover_gpu(L);
  }
  if (ed.history[0] && ed.write_history) ed.write_history(ed.history);
  if (isatty(0)) fputs("\n", stdout);
}
