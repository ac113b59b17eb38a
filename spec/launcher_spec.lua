-- Jobs a launcher starts (torchrun, srun, mpirun): mgpu.launcher reads each
-- one's variables (tables stand in for the environment), and `mgpu
-- script.lua` under one joins its job before the script.  The runs of whole
-- jobs use spec/c/fake_cuda.c and spec/c/fake_nvshmem.c (MGPU_FAKE_CUDA,
-- MGPU_FAKE_NVSHMEM), whose initialisation fails unless every rank was handed
-- the id rank 0 made; with torch installed, they also meet in torch's own
-- TCPStore.  Each command runs under `env -i`: nothing of this shell leaks in.
local util = dofile("spec/support/util.lua")
local launcher = require "mgpu.launcher"

local fake_cuda, fake_nvshmem = os.getenv("MGPU_FAKE_CUDA"), os.getenv("MGPU_FAKE_NVSHMEM")

-- A copy of table t with `changes` applied (false removes a name).
local function with(t, changes)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  for k, v in pairs(changes or {}) do out[k] = v or nil end
  return out
end

local function getenv(t) return function(name) return t[name] end end

local torchrun = { WORLD_SIZE = "4", RANK = "2", LOCAL_RANK = "2", LOCAL_WORLD_SIZE = "4", MASTER_ADDR = "10.0.0.1",
                   MASTER_PORT = "29500", TORCHELASTIC_RUN_ID = "r1", TORCHELASTIC_RESTART_COUNT = "0",
                   TORCHELASTIC_USE_AGENT_STORE = "True" }
local srun = { SLURM_STEP_ID = "0", SLURM_PROCID = "1", SLURM_STEP_NUM_TASKS = "2", SLURM_NTASKS = "8",
               SLURM_LOCALID = "1", SLURM_JOB_ID = "77", SLURM_STEP_NUM_NODES = "1", USER = "alice" }
local mpirun = { OMPI_COMM_WORLD_RANK = "3", OMPI_COMM_WORLD_SIZE = "4", OMPI_COMM_WORLD_LOCAL_RANK = "3",
                 OMPI_COMM_WORLD_LOCAL_SIZE = "4", PMIX_NAMESPACE = "prterun-h-42@1", USER = "bob" }

local function detect(t) return launcher.detect(getenv(t)) end

-- The message detect(t) raises, after the "file:line: " naming this spec.
local function refusal(t)
  local err = util.err_of(detect, t)
  return err:match("^spec/launcher_spec%.lua:%d+: (.*)$") or ("not located here: " .. err)
end

describe("mgpu.launcher", function()
  it("reads torchrun's ranks and its agent's TCP store", function()
    local l = detect(torchrun)
    assert.are.same({ "torchrun", 2, 4, 2, 2 }, { l.launcher, l.rank, l.count, l.local_rank, l.device })
    assert.are.same({ "tcp://10.0.0.1:29500", "MASTER_ADDR:MASTER_PORT", "mgpu/torchrun-r1.0/uid", 120 },
                    { l.where, l.via, l.key, l.timeout })
    assert.are.equal("mgpu/torchrun-r1.1/uid", detect(with(torchrun, { TORCHELASTIC_RESTART_COUNT = "1" })).key)
    assert.are.equal("tcp://[fd00::1]:29500", detect(with(torchrun, { MASTER_ADDR = "fd00::1" })).where)
    assert.are.equal(0, detect(with(torchrun, { CUDA_VISIBLE_DEVICES = "5" })).device)   -- one GPU shown: it
    assert.are.equal(2, detect(with(torchrun, { CUDA_VISIBLE_DEVICES = "0,1,2,3" })).device)
    assert.are.equal(7, detect(with(torchrun, { MGPU_RENDEZVOUS_TIMEOUT = "7" })).timeout)
    l = detect(with(torchrun, { MGPU_RENDEZVOUS_FILE = "/shared/j.uid", MASTER_ADDR = false, MASTER_PORT = false }))
    assert.are.same({ "file:/shared/j.uid", "/shared/j.uid", "MGPU_RENDEZVOUS_FILE" }, { l.where, l.file, l.via })
    l = detect(with(torchrun, { TORCHELASTIC_RUN_ID = false, TORCHELASTIC_RESTART_COUNT = false,
                                TORCHELASTIC_USE_AGENT_STORE = false }))   -- set by hand, as torch's env:// reads them
    assert.are.equal("mgpu/torchrun-job.0/uid", l.key)
  end)

  it("reads a task of an srun step, meeting in /tmp when the step has one node", function()
    local l = detect(srun)
    assert.are.same({ "srun", 1, 2, 1, 1 }, { l.launcher, l.rank, l.count, l.local_rank, l.device })   -- the step's count
    assert.are.same({ "file:/tmp/mgpu-rendezvous-alice-slurm-77.0", "mgpu/slurm-77.0/uid" }, { l.where, l.key })
    assert.are.equal(8, detect(with(srun, { SLURM_STEP_NUM_TASKS = false })).count)
    assert.matches("srun started 2 ranks on more than one node: set MGPU_RENDEZVOUS_FILE",
                   refusal(with(srun, { SLURM_STEP_NUM_NODES = "2" })), 1, true)
    assert.are.equal("file:/gpfs/x", detect(with(srun, { SLURM_STEP_NUM_NODES = "2", MGPU_RENDEZVOUS_FILE = "/gpfs/x" })).where)
    assert.matches("without a job name (SLURM_JOB_ID)", refusal(with(srun, { SLURM_JOB_ID = false })), 1, true)
    -- the batch script has SLURM_PROCID and SLURM_NTASKS, but it is no task of a step
    local none, why = detect(with(srun, { SLURM_STEP_ID = false, SLURM_STEP_NUM_TASKS = false }))
    assert.is_nil(none)
    assert.matches("this is Slurm's batch script, not a task of srun", why, 1, true)
  end)

  it("reads Open MPI's ranks, meeting in /tmp when they share one node", function()
    local l = detect(mpirun)
    assert.are.same({ "mpirun", 3, 4, 3 }, { l.launcher, l.rank, l.count, l.local_rank })
    assert.are.equal("file:/tmp/mgpu-rendezvous-bob-ompi-prterun-h-42_1", l.where)
    assert.matches("mpirun started 4 ranks without a job name (PMIX_NAMESPACE)",
                   refusal(with(mpirun, { PMIX_NAMESPACE = false })), 1, true)
    assert.matches("mpirun started 8 ranks on more than one node",
                   refusal(with(mpirun, { OMPI_COMM_WORLD_SIZE = "8" })), 1, true)
  end)

  it("takes the innermost launcher, and needs no rendezvous for one rank", function()
    assert.are.equal("torchrun", detect(with(srun, torchrun)).launcher)          -- torchrun inside an srun task
    assert.are.equal("mpirun", detect(with(srun, mpirun)).launcher)
    local l = detect({ WORLD_SIZE = "1", RANK = "0", LOCAL_RANK = "0" })
    assert.are.same({ 0, 1 }, { l.rank, l.count })
    assert.is_nil(l.where)
    assert.is_nil(detect({}))
    assert.is_nil(detect({ RANK = "3" }))                                          -- RANK alone names no job
  end)

  it("names the variable at fault", function()
    local cases = {
      { { WORLD_SIZE = "two" }, "distributed.init: WORLD_SIZE is 'two', not a whole number" },
      { { RANK = "-1" }, "distributed.init: RANK is '-1', not a whole number" },
      { { RANK = false }, "distributed.init: torchrun's variables are incomplete: WORLD_SIZE is set but RANK is not" },
      { { LOCAL_RANK = false }, "distributed.init: torchrun's variables are incomplete: WORLD_SIZE is set but LOCAL_RANK is not" },
      { { RANK = "4" }, "distributed.init: RANK=4 but WORLD_SIZE=4: the rank must be below the count" },
      { { WORLD_SIZE = "0", RANK = "0", LOCAL_RANK = "0" }, "distributed.init: WORLD_SIZE must be at least 1" },
      { { LOCAL_RANK = "3" }, "distributed.init: LOCAL_RANK=3 is above RANK=2: a local rank cannot exceed the rank" },
      { { LOCAL_WORLD_SIZE = "2" }, "distributed.init: LOCAL_RANK=2, LOCAL_WORLD_SIZE=2 and WORLD_SIZE=4 contradict each other" },
      { { LOCAL_WORLD_SIZE = "8" }, "distributed.init: LOCAL_RANK=2, LOCAL_WORLD_SIZE=8 and WORLD_SIZE=4 contradict each other" },
      { { MASTER_PORT = "70000" }, "distributed.init: MASTER_PORT is '70000', not a port (1..65535)" },
      { { MASTER_PORT = false }, "distributed.init: torchrun's MASTER_PORT is not set: its ranks meet in its TCP store" },
      { { MASTER_ADDR = false }, "distributed.init: torchrun's MASTER_ADDR is not set" },
      { { TORCHELASTIC_USE_AGENT_STORE = "False" }, "distributed.init: TORCHELASTIC_USE_AGENT_STORE is False: no torchrun agent" },
      { { MGPU_RENDEZVOUS_TIMEOUT = "soon" }, "distributed.init: MGPU_RENDEZVOUS_TIMEOUT is 'soon', not a whole number" },
    }
    for _, c in ipairs(cases) do
      local msg = refusal(with(torchrun, c[1]))
      assert(msg:sub(1, #c[2]) == c[2], "got: " .. msg .. "\nwant: " .. c[2])
    end
    assert.matches("distributed.init: SLURM_LOCALID=2 is above SLURM_PROCID=1", refusal(with(srun, { SLURM_LOCALID = "2" })), 1, true)
    assert.matches("distributed.init: OMPI_COMM_WORLD_RANK=4 but OMPI_COMM_WORLD_SIZE=4",
                   refusal(with(mpirun, { OMPI_COMM_WORLD_RANK = "4" })), 1, true)
  end)
end)

-- -- Whole jobs ----------------------------------------------------------------------------------

-- A command running the mgpu command with exactly the variables of t (and `args`).
local function command(t, args)
  local words = {}
  for k, v in pairs(t) do words[#words + 1] = string.format("%s='%s'", k, v) end
  return string.format("timeout 60 env -i %s %s %s", table.concat(words, " "), util.bin, args)
end

-- Run one command per rank at once; returns their outputs and exit codes.
local function run_ranks(cmds)
  local files, parts = {}, {}
  for i, c in ipairs(cmds) do
    files[i] = os.tmpname()
    parts[#parts + 1] = string.format("(%s > %s 2>&1; echo \"exit=$?\" >> %s) &", c, files[i], files[i])
  end
  os.execute(table.concat(parts, " ") .. " wait")
  local outs, codes = {}, {}
  for i, f in ipairs(files) do
    local h = assert(io.open(f)); outs[i] = h:read("*a"); h:close()
    os.remove(f)
    codes[i] = tonumber(outs[i]:match("exit=(%d+)%s*$"))
  end
  return outs, codes
end

local function exists(path) local f = io.open(path); if f then f:close() end; return f ~= nil end

-- A fresh directory.
local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  os.execute("mkdir -p " .. d)
  return d
end

-- Each rank of the job: its ranks, a barrier, a symmetric array, init{} again.
local job_script = util.script([[
local mgpu = require "mgpu"
mgpu.distributed.barrier()
local x = mgpu.symmetric({ 16 }, "f32")
mgpu.distributed.init{}                   -- joined already by the mgpu command: nothing happens
print(string.format("rank %d of %d on %s: %d", mgpu.process_index(), mgpu.process_count(), mgpu.device().name, x.size))
]])

-- The variables of a rank of the fake GPU job (one GPU shown to each rank, as srun --gpus-per-task=1 does).
local function fake_job(dir, t)
  return with(t, { MGPU_LIBCUDA = fake_cuda, MGPU_NVSHMEM = fake_nvshmem, FAKE_NVSHMEM_DIR = dir, MGPU_CACHE = "off",
                   CUDA_VISIBLE_DEVICES = "0" })
end

local describe_fake = (fake_cuda and fake_nvshmem) and describe or pending

describe_fake("mgpu script.lua under a launcher (a stand-in GPU and NVSHMEM)", function()
  it("joins torchrun's job through a file, every rank with rank 0's id", function()
    local dir = tmpdir()
    local cmds = {}
    for r = 0, 2 do
      cmds[#cmds + 1] = command(fake_job(dir, with(torchrun, { WORLD_SIZE = "3", RANK = tostring(r), LOCAL_RANK = tostring(r),
        LOCAL_WORLD_SIZE = "3", MGPU_RENDEZVOUS_FILE = dir .. "/uid" })), job_script)
    end
    local outs, codes = run_ranks(cmds)
    for r = 0, 2 do
      assert.are.equal(0, codes[r + 1], outs[r + 1])
      assert.matches("rank " .. r .. " of 3 on fake H100 %(fake_cuda%): 16", outs[r + 1])
      assert.is_true(exists(dir .. "/rank" .. r))           -- it joined the fake NVSHMEM job
    end
    assert.is_false(exists(dir .. "/uid"))                 -- rank 0 removed the file once every rank had read it
    os.execute("rm -rf " .. dir)
  end)

  it("joins an srun step on one node through a file in /tmp", function()
    local dir, job = tmpdir(), tostring(os.time()) .. tostring(math.random(1e6))
    local cmds = {}
    for r = 0, 1 do
      cmds[#cmds + 1] = command(fake_job(dir, with(srun, { SLURM_PROCID = tostring(r), SLURM_LOCALID = tostring(r),
        SLURM_JOB_ID = job, USER = "spec" })), job_script)
    end
    local outs, codes = run_ranks(cmds)
    for r = 0, 1 do
      assert.are.equal(0, codes[r + 1], outs[r + 1])
      assert.matches("rank " .. r .. " of 2 on fake H100", outs[r + 1])
    end
    assert.is_false(exists("/tmp/mgpu-rendezvous-spec-slurm-" .. job .. ".0"))
    os.execute("rm -rf " .. dir)
  end)

  it("names the rendezvous when rank 0 never comes, after MGPU_RENDEZVOUS_TIMEOUT", function()
    local dir = tmpdir()
    local t = fake_job(dir, with(torchrun, { MGPU_RENDEZVOUS_FILE = dir .. "/uid", MGPU_RENDEZVOUS_TIMEOUT = "1" }))
    local t0 = os.time()
    local outs, codes = run_ranks({ command(t, job_script) })
    assert.are.equal(1, codes[1], outs[1])
    assert.is_true(os.time() - t0 <= 10)
    assert.matches("mgpu: (launcher):3: distributed.init: the ranks of torchrun could not meet through MGPU_RENDEZVOUS_FILE (file:"
                   .. dir .. "/uid): rank 2: rank 0 never wrote " .. dir .. "/uid in time (is rank 0 running, and does every "
                   .. "rank see that path?)", outs[1], 1, true)
    local port = tostring(40000 + math.random(20000))
    outs, codes = run_ranks({ command(with(t, { MGPU_RENDEZVOUS_FILE = false, MASTER_ADDR = "127.0.0.1", MASTER_PORT = port }), job_script) })
    assert.are.equal(1, codes[1], outs[1])
    assert.matches("the ranks of torchrun could not meet through MASTER_ADDR:MASTER_PORT (tcp://127.0.0.1:" .. port
                   .. "): rank 2: no TCP store answered at 127.0.0.1:" .. port .. " in time", outs[1], 1, true)
    os.execute("rm -rf " .. dir)
  end)
end)

describe("mgpu script.lua under a launcher", function()
  it("refuses a launcher's job in the interpreter, and compiles as its rank under --emit-ptx", function()
    local outs, codes = run_ranks({ command(with(torchrun, { MGPU_INTERPRET = "1" }), job_script) })
    assert.are.equal(1, codes[1], outs[1])
    assert.matches("distributed.init: torchrun started this process as rank 2 of 4, but kernels run in the interpreter here "
                   .. "(MGPU_INTERPRET is set): each rank of a launcher's job needs a GPU (mgpu -n 4 --interpret", outs[1], 1, true)
    local dir = tmpdir()
    local p = util.script('local mgpu = require "mgpu"; print("rank", mgpu.process_index(), mgpu.process_count())')
    outs, codes = run_ranks({ command(torchrun, "--emit-ptx " .. dir .. " " .. p) })
    assert.are.equal(0, codes[1], outs[1])
    assert.matches("rank\t2\t4", outs[1])
    os.execute("rm -rf " .. dir)
  end)

  it("does nothing in a job of mgpu -n", function()
    local p = util.script('local mgpu = require "mgpu"\nmgpu.distributed.init{}\nprint("rank", mgpu.process_index())\n')
    local outs, codes = run_ranks({ command({ MGPU_INTERPRET = "1" }, "-n 2 " .. p) })
    assert.are.equal(0, codes[1], outs[1])
    assert.matches("rank\t0", outs[1])
    assert.matches("rank\t1", outs[1])
  end)

  it("says what distributed.init{} needs outside a launcher, at the script's line", function()
    local p = util.script('local mgpu = require "mgpu"\nmgpu.distributed.init{}\n')
    local outs = run_ranks({ command({ MGPU_INTERPRET = "1" }, p),
                             command({ MGPU_INTERPRET = "1", SLURM_PROCID = "0", SLURM_NTASKS = "4" }, p) })
    assert.matches(p .. ":2: distributed.init{}: no launcher started this process (torchrun sets WORLD_SIZE, mpirun "
                   .. "OMPI_COMM_WORLD_SIZE, srun SLURM_STEP_NUM_TASKS): start the script with torchrun, srun or mpirun",
                   outs[1], 1, true)
    assert.matches("(SLURM_PROCID is set without SLURM_STEP_ID: this is Slurm's batch script, not a task of srun)", outs[2], 1, true)
    local mgpu = require "mgpu"
    assert.matches("launcher_spec.lua:%d+: distributed.init: timeout must be a positive number of seconds, got %-1",
                   util.err_of(mgpu.distributed.init, { timeout = -1 }))
    assert.matches("launcher_spec.lua:%d+: distributed.init: unknown option 'timout'",
                   util.err_of(mgpu.distributed.init, { timout = 1 }))
  end)
end)

-- With torch: the ranks meet in torch's own TCPStore, hosted here as torchrun's agent hosts it.
local has_torch = fake_cuda and fake_nvshmem and os.execute("python3 -c 'import torch' > /dev/null 2>&1")
local describe_torch = (has_torch == true or has_torch == 0) and describe or pending

describe_torch("mgpu script.lua in torch's TCPStore", function()
  it("meets rank 0 through a store torch serves", function()
    local dir, files, parts = tmpdir(), {}, {}
    for r = 0, 1 do
      local c = command(fake_job(dir, with(torchrun, { WORLD_SIZE = "2", RANK = tostring(r), LOCAL_RANK = tostring(r),
        LOCAL_WORLD_SIZE = "2", MASTER_ADDR = "127.0.0.1", MASTER_PORT = "$PORT" })), job_script):gsub("'%$PORT'", "$PORT")
      files[r + 1] = os.tmpname()
      parts[#parts + 1] = string.format("(%s > %s 2>&1; echo \"exit=$?\" >> %s) &", c, files[r + 1], files[r + 1])
    end
    local ranks = util.script(table.concat(parts, "\n") .. "\nwait\n")   -- a shell script, whatever its name
    local py = util.script([==[
import datetime, os, subprocess, sys
from torch.distributed import TCPStore
store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=datetime.timedelta(seconds=30))
sys.exit(subprocess.call(["sh", sys.argv[1]], env=dict(os.environ, PORT=str(store.port))))
]==])
    os.execute(string.format("python3 %s %s > /dev/null 2>&1", py, ranks))
    for r = 0, 1 do
      local h = assert(io.open(files[r + 1])); local out = h:read("*a"); h:close()
      os.remove(files[r + 1])
      assert.matches("exit=0", out)
      assert.matches("rank " .. r .. " of 2 on fake H100", out)
    end
    os.execute("rm -rf " .. dir)
  end)
end)
