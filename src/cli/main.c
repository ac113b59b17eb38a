/*
** main.c -- the mgpu command: scripts (with an `arg` table like lua's),
** one-liners, the REPL, `mgpu info`, and compile-only PTX emission.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "../lua/lmgpu.h"
#include "cli.h"

static const char usage[] =
  "usage: mgpu [options] [script [args...]]\n"
  "       mgpu info\n"
  "Options:\n"
  "  -e CODE         run CODE (Lua)\n"
  "  -i              enter the interactive loop after the script\n"
  "  --interpret     run kernels in the CPU interpreter even when a GPU is present\n"
  "  --emit-ptx DIR  compile every kernel the script calls and write DIR/<kernel>.ptx;\n"
  "                  nothing executes and mgpu.compile_only() is true\n"
  "  --target NAME   compile for sm_90a (Hopper) or sm_100a (Blackwell); default: MGPU_TARGET,\n"
  "                  else the GPU's architecture, else sm_90a\n"
  "  -n N            run the script on N devices: one process per GPU over NVSHMEM, or\n"
  "                  N simulated devices in the interpreter (no GPUs, --interpret);\n"
  "                  under torchrun, srun or mpirun, leave -n out: each process started\n"
  "                  is one device of the launcher's job\n"
  "  -v, --version   print the version\n"
  "  -h, --help      print this help\n"
  "  --              stop handling options ('-' as the script reads stdin)\n"
  "With no script and no -e, mgpu starts the interactive loop.\n";

typedef cli_opts opts;

/* require("mgpu").configure{...} */
static int configure(lua_State *L, const opts *o) {
  if (!o->mode && !o->target) return LUA_OK;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mgpu");
  if (cli_docall(L, 1, 1)) return 1;
  lua_getfield(L, -1, "configure");
  lua_createtable(L, 0, 3);
  if (o->mode) { lua_pushstring(L, o->mode); lua_setfield(L, -2, "mode"); }
  if (o->emit_dir) { lua_pushstring(L, o->emit_dir); lua_setfield(L, -2, "emit_ptx"); }
  if (o->target) { lua_pushstring(L, o->target); lua_setfield(L, -2, "target"); }
  int st = cli_docall(L, 1, 0);
  lua_pop(L, 1);
  return st;
}

/* The global `arg`: arg[0] = script, arg[1..] = its arguments, negative
** indices for the command and options, as lua does. */
static void make_arg(lua_State *L, int argc, char **argv, int script) {
  int base = script ? script : argc;
  lua_createtable(L, argc - base, base + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - base);
  }
  lua_setglobal(L, "arg");
}

int cli_run_script(lua_State *L, int argc, char **argv, int script) {
  const char *path = strcmp(argv[script], "-") == 0 ? NULL : argv[script];
  cli_report_script(path);
  if (luaL_loadfile(L, path) != LUA_OK) {
    cli_report(lua_tostring(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  int n = argc - script - 1;
  luaL_checkstack(L, n, "too many arguments");
  for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
  return cli_docall(L, n, 0);
}

static int run_string(lua_State *L, const char *code) {
  if (luaL_loadbuffer(L, code, strlen(code), "=(command line)") != LUA_OK) {
    cli_report(lua_tostring(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  return cli_docall(L, 0, 0);
}

static const char info_code[] =
  "local mgpu = require 'mgpu'\n"
  "mgpu.configure{quiet = true}\n"
  "local d = mgpu.device()\n"
  "print(string.format('mgpu %s (%s)', mgpu.version, _VERSION))\n"
  "if d.mode == 'gpu' then\n"
  "  print(string.format('driver:   CUDA %d.%d', d.driver_version // 1000, d.driver_version % 1000 // 10))\n"
  "  print(string.format('device:   %s (sm_%d%d)', d.name, d.cc_major, d.cc_minor))\n"
  "  print(string.format('SMs:      %d', d.sm_count))\n"
  "  print(string.format('SMEM:     %d bytes per block (opt-in)', d.smem_per_block))\n"
  "  print(string.format('L2:       %d bytes', d.l2_bytes))\n"
  "  print(string.format('memory:   %.1f GiB', d.global_mem / 2^30))\n"
  "else\n"
  "  print('no GPU: interpret mode (' .. d.reason .. ')')\n"
  "end\n"
  "print('target:   ' .. d.target)\n";

/* mkdir -p */
static int make_dirs(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) { errno = ENAMETOOLONG; return -1; }
  memcpy(buf, path, n + 1);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
  return 0;
}

static int parse(int argc, char **argv, opts *o, int *status) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) { if (i + 1 < argc) o->script = i + 1; return 0; }
    if (!strcmp(a, "-") || a[0] != '-') {
      if (!strcmp(a, "info") && i == 1 && argc == 2) { o->info = 1; return 0; }
      o->script = i;
      return 0;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); *status = 0; return 1; }
    if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
      printf("mgpu %s (engine %s, %s)\n", mgpu_version(), mgpu_engine_id(), LUA_RELEASE);
      *status = 0;
      return 1;
    }
    if (!strcmp(a, "-i")) { o->interactive = 1; continue; }
    if (!strcmp(a, "--interpret")) { o->mode = "interpret"; continue; }
    if (!strcmp(a, "-n")) {
      char *end = NULL;
      long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
      if (!end || *end || n < 1 || n > 64) {
        fprintf(stderr, "mgpu: -n needs a device count between 1 and 64\n%s", usage);
        *status = 1;
        return 1;
      }
      o->devices = (int)n;
      i++;
      continue;
    }
    if (!strcmp(a, "--target")) {
      if (i + 1 >= argc || (strcmp(argv[i + 1], "sm_90a") && strcmp(argv[i + 1], "sm_100a"))) {
        fprintf(stderr, "mgpu: --target needs sm_90a or sm_100a\n%s", usage);
        *status = 1;
        return 1;
      }
      o->target = argv[++i];
      continue;
    }
    if (!strcmp(a, "--emit-ptx") || !strcmp(a, "-e")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "mgpu: %s needs an argument\n%s", a, usage);
        *status = 1;
        return 1;
      }
      if (a[1] == 'e') { i++; continue; }   /* -e runs later, in order */
      o->mode = "compile";
      o->emit_dir = argv[++i];
      if (!*o->emit_dir) {
        fprintf(stderr, "mgpu: --emit-ptx needs a directory name, got an empty one\n%s", usage);
        *status = 1;
        return 1;
      }
      if (make_dirs(o->emit_dir) != 0) {
        fprintf(stderr, "mgpu: --emit-ptx: cannot create the directory '%s': %s\n", o->emit_dir, strerror(errno));
        *status = 1;
        return 1;
      }
      continue;
    }
    fprintf(stderr, "mgpu: unknown option '%s'\n%s", a, usage);
    *status = 1;
    return 1;
  }
  return 0;
}

lua_State *cli_newstate(int argc, char **argv, const cli_opts *o) {
  lua_State *L = luaL_newstate();
  if (!L) { fputs("mgpu: cannot create a Lua state (out of memory)\n", stderr); return NULL; }
  luaL_openlibs(L);
  lmgpu_install(L);
  make_arg(L, argc, argv, o->script);
  if (configure(L, o)) { lua_close(L); return NULL; }
  return L;
}

int main(int argc, char **argv) {
  opts o;
  memset(&o, 0, sizeof o);
  int status = 0;
  if (parse(argc, argv, &o, &status)) return status;
  if (o.devices > 1) {
    if (!o.script) { fprintf(stderr, "mgpu: -n runs a script on several devices; name the script\n%s", usage); return 1; }
    return cli_run_devices(argc, argv, &o);
  }
  lua_State *L = cli_newstate(argc, argv, &o);
  if (!L) return 1;
  cli_sigint_install(L, 0);
  int joined = 0;
  if (o.script) status = cli_join_launcher(L, &joined);
  if (!status && o.info) status = run_string(L, info_code);
  /* -e chunks, in order, before the script */
  int end = o.script ? o.script : argc;
  for (int i = 1; !status && i < end; i++)
    if (!strcmp(argv[i], "-e")) status = run_string(L, argv[++i]);
    else if (!strcmp(argv[i], "--emit-ptx") || !strcmp(argv[i], "--target")) i++;
  int ran_e = 0;
  for (int i = 1; i < end; i++) if (!strcmp(argv[i], "-e")) ran_e = 1;
  if (!status && o.script) status = cli_run_script(L, argc, argv, o.script);
  if (status && cli_sigint_take()) {   /* Ctrl-C: reported as the error "interrupted" */
    lua_close(L);
    return 130;
  }
  if (!status && (o.interactive || (!o.script && !ran_e && !o.info))) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "mgpu");
    if (cli_docall(L, 1, 1) == LUA_OK) lua_setglobal(L, "mgpu");
    if (isatty(0)) printf("mgpu %s (%s) -- mgpu is loaded; help NAME shows its reference; Ctrl-D quits\n", mgpu_version(), LUA_RELEASE);
    cli_repl(L);
  }
  lua_close(L);
  if (joined) {   /* end as -n's devices do: NVSHMEM's exit-time destructors fault once the CUDA context is gone */
    fflush(NULL);
    _exit(status ? 1 : 0);
  }
  return status ? 1 : 0;
}
