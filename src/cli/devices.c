/*
** devices.c -- mgpu -n N: one script on N devices; and mgpu script.lua as
** one device of a job a launcher (torchrun, srun, mpirun) started.
**
** With N GPUs and NVSHMEM, one process per GPU: the command forks them, rank
** 0 makes the NVSHMEM unique id and hands it to the others through shared
** memory, and each process joins the job on its GPU before the script runs.
** Otherwise (no GPU, fewer GPUs, --interpret, MGPU_INTERPRET) N threads run
** the script as simulated devices of one world, in the interpreter.  With
** --emit-ptx the script runs once, as device 0 of N, compiling only.
*/
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "../../include/mgpu.h"
#include "cli.h"

/* Make the state device `rank` of the job (world or uid), then create its
** context so that every device joins before its script starts. */
static int join(lua_State *L, mgpu_world *world, int rank, int count, const unsigned char *uid, int compile) {
  static const char code[] =
    "local world, rank, count, uid, compile = ...\n"
    "local d, c = require 'mgpu.distributed', require 'mgpu.context'\n"
    "d.job = { world = world, rank = rank, count = count, uid = uid, compile = compile }\n"
    "if compile then return end\n"
    "if world then c.configure{ quiet = true } else c.configure{ device = rank } end\n"
    "c.get()\n";
  if (luaL_loadbuffer(L, code, sizeof code - 1, "=(mgpu -n)") != LUA_OK) {
    cli_report(lua_tostring(L, -1));
    return 1;
  }
  if (world) lua_pushlightuserdata(L, world); else lua_pushnil(L);
  lua_pushinteger(L, rank);
  lua_pushinteger(L, count);
  if (uid) lua_pushlstring(L, (const char *)uid, 128); else lua_pushnil(L);
  lua_pushboolean(L, compile);
  return cli_docall(L, 5, 0);
}

/* The script as device `rank` of the job in a fresh state; closing the
** state releases its context, which leaves its world (the others'
** collective calls no longer wait for it).  A simulated device (lines set)
** writes whole lines and ends at os.exit.  Returns 0 when the script
** succeeded, else its os.exit code or 1. */
static int run_device(int argc, char **argv, const cli_opts *o, mgpu_world *world, int rank, const unsigned char *uid,
                      int compile, cli_lines *lines) {
  lua_State *L = cli_newstate(argc, argv, o);
  if (!L) return 1;
  int exit_code = -1;
  if (lines) cli_sim_install(L, rank, lines, &exit_code);
  int st = join(L, world, rank, o->devices, uid, compile) || cli_run_script(L, argc, argv, o->script);
  lua_sethook(L, NULL, 0, 0);   /* (os.exit's) */
  fflush(stdout);
  lua_close(L);
  if (lines) cli_lines_close(lines);
  return exit_code >= 0 ? exit_code : st ? 1 : 0;
}

/* -- Simulated devices: threads ------------------------------------------------------ */

typedef struct sim {
  int argc;
  char **argv;
  cli_opts o;
  mgpu_world *world;
  int rank, status;
  char prefix[32];
  cli_lines lines;
} sim;

static void *sim_main(void *p) {
  sim *s = p;
  snprintf(s->prefix, sizeof s->prefix, "device %d: ", s->rank);
  cli_report_prefix(s->prefix);
  s->status = run_device(s->argc, s->argv, &s->o, s->world, s->rank, NULL, 0, &s->lines);
  return NULL;
}

static int run_simulated(int argc, char **argv, const cli_opts *o, const char *why) {
  int n = o->devices;
  mgpu_world *w = NULL;
  if (mgpu_world_create(n, &w)) { fputs("mgpu: cannot create a world of devices\n", stderr); return 1; }
  fprintf(stderr, "mgpu: %d simulated devices in the interpreter (%s)\n", n, why);
  sim *s = calloc((size_t)n, sizeof *s);
  pthread_t *t = calloc((size_t)n, sizeof *t);
  int status = 0;
  if (!s || !t) { fputs("mgpu: out of memory\n", stderr); status = 1; n = 0; }
  int started = 0;
  for (int i = 0; i < n; i++) {
    s[i] = (sim){ argc, argv, *o, w, i, 1, "", { NULL, 0, 0 } };
    s[i].o.mode = "interpret";
    if (pthread_create(&t[i], NULL, sim_main, &s[i]) != 0) { fputs("mgpu: cannot start a device thread\n", stderr); status = 1; break; }
    started++;
  }
  for (int i = 0; i < started; i++) {   /* the job's status: the first device's that failed */
    pthread_join(t[i], NULL);
    if (!status) status = s[i].status;
  }
  free(s);
  free(t);
  mgpu_world_release(w);
  return status;
}

/* -- NVSHMEM processes ------------------------------------------------------------------ */

typedef struct shared {
  atomic_int ready;               /* 1: uid holds rank 0's unique id; -1: rank 0 could not make one */
  unsigned char uid[128];
} shared;

static int child(int argc, char **argv, const cli_opts *o, shared *sh, int rank) {
  char prefix[32];
  snprintf(prefix, sizeof prefix, "device %d: ", rank);
  cli_report_prefix(prefix);
  if (rank == 0) {
    unsigned char uid[128];
    int ok = mgpu_dist_uniqueid(uid, (int32_t)sizeof uid) == MGPU_OK;
    if (ok) memcpy(sh->uid, uid, sizeof uid);
    atomic_store(&sh->ready, ok ? 1 : -1);
    if (!ok) {
      cli_report("NVSHMEM is not available (libnvshmem_host.so.3 not found or failing; MGPU_NVSHMEM names it); "
                 "run with --interpret to simulate the devices");
      return 1;
    }
  }
  for (int waited = 0; atomic_load(&sh->ready) == 0; waited++) {
    if (waited > 120000) { cli_report("rank 0 made no NVSHMEM unique id in 120 s"); return 1; }
    usleep(1000);
  }
  if (atomic_load(&sh->ready) < 0) return 1;
  return run_device(argc, argv, o, NULL, rank, sh->uid, 0, NULL);
}

static int run_processes(int argc, char **argv, const cli_opts *o) {
  int n = o->devices;
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) { perror("mgpu: mmap"); return 1; }
  atomic_init(&sh->ready, 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pids[64];
  int started = 0, status = 0;
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p < 0) { perror("mgpu: fork"); status = 1; break; }
    if (p == 0) _exit(child(argc, argv, o, sh, i));
    pids[started++] = p;
  }
  /* wait; once one device fails, give the others 10 s to finish, then stop them */
  int left = started;
  time_t failed_at = 0;
  while (left > 0) {
    int ws;
    pid_t p = waitpid(-1, &ws, WNOHANG);
    if (p > 0) {
      int rank = -1;
      for (int i = 0; i < started; i++) if (pids[i] == p) { pids[i] = 0; left--; rank = i; }
      if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {   /* named: an os.exit or a crash says nothing itself */
        if (WIFEXITED(ws)) fprintf(stderr, "mgpu: device %d exited with status %d\n", rank, WEXITSTATUS(ws));
        else if (WIFSIGNALED(ws)) fprintf(stderr, "mgpu: device %d was ended by signal %d\n", rank, WTERMSIG(ws));
        status = 1;
        if (!failed_at) failed_at = time(NULL);
      }
      continue;
    }
    if (failed_at && time(NULL) - failed_at > 10) {
      for (int i = 0; i < started; i++) if (pids[i]) kill(pids[i], SIGTERM);
      fputs("mgpu: a device failed; the others were stopped\n", stderr);
      failed_at = time(NULL) + 3600;
    }
    usleep(2000);
  }
  munmap(sh, sizeof *sh);
  return status;
}

/* GPUs the NVIDIA driver lists, without initialising CUDA in this process
** (forked children could not use it); -1 when unknown. */
static int gpus_listed(void) {
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

int cli_run_devices(int argc, char **argv, const cli_opts *o) {
  if (o->mode && !strcmp(o->mode, "compile")) {   /* --emit-ptx: device 0 of N, compiling only */
    return run_device(argc, argv, o, NULL, 0, NULL, 1, NULL);
  }
  const char *env = getenv("MGPU_INTERPRET");
  if (o->mode) return run_simulated(argc, argv, o, "--interpret");
  if (env && *env && strcmp(env, "0") != 0) return run_simulated(argc, argv, o, "MGPU_INTERPRET is set");
  const char *lib = getenv("MGPU_LIBCUDA");
  void *cuda = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) return run_simulated(argc, argv, o, "no CUDA driver");
  dlclose(cuda);
  int g = gpus_listed();
  if (g >= 0 && g < o->devices) {
    char why[96];
    snprintf(why, sizeof why, "%d GPU%s for %d devices", g, g == 1 ? "" : "s", o->devices);
    return run_simulated(argc, argv, o, why);
  }
  return run_processes(argc, argv, o);
}

/* -- A launcher's job ------------------------------------------------------------------- */

int cli_join_launcher(lua_State *L, int *joined) {
  static const char code[] =
    "local l = require('mgpu.launcher').detect(os.getenv)\n"
    "if not l or l.count == 1 then return end\n"
    "require('mgpu.distributed').init{}\n"
    "return l.rank\n";
  if (luaL_loadbuffer(L, code, sizeof code - 1, "=(launcher)") != LUA_OK) {
    cli_report(lua_tostring(L, -1));
    return 1;
  }
  if (cli_docall(L, 0, 1)) return 1;
  static char prefix[32];
  *joined = lua_isinteger(L, -1);
  if (*joined) {
    snprintf(prefix, sizeof prefix, "device %d: ", (int)lua_tointeger(L, -1));
    cli_report_prefix(prefix);
  }
  lua_pop(L, 1);
  return 0;
}
